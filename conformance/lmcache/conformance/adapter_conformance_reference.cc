// AdapterConformance.MatchesReference: an adapter of a storage type the project knows and the
// reference adapter of that type over the same store (AdapterUnderTest::reference) agree on the
// storage format. Objects from 0 bytes to KV-chunk-sized, under keys that differ in one field,
// are stored by one side and looked up and loaded by the other, byte for byte (size() included);
// a delete by one side is a miss for the other. A vendor adapter that frames, names or encodes
// its objects in a way of its own reads its own writes back and passes every other property,
// but a deployment that mixes it with LMCache's reads nothing: this is where it fails.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

void store_all(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
               const std::vector<MemoryObjPtr>& objs, const std::string& who) {
  const TaskId id = a.submit_store_task(keys, objs);
  std::map<TaskId, L2StoreResult> got;
  require(pop_stores_until(a, {id}, &got).empty(), who + ": a store did not complete");
  require(got.at(id).is_successful(),
          who + ": a store of " + std::to_string(keys.size()) + " object(s) failed");
}

Bitmap wait_lookup(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                   const std::string& who) {
  const TaskId id = a.submit_lookup_and_lock_task(keys);
  std::optional<Bitmap> bits =
      poll_until([&] { return a.query_lookup_and_lock_result(id); }, result_timeout());
  require(bits.has_value(), who + ": a lookup did not complete");
  std::vector<ObjectKey> hits;
  for (std::size_t i : bits->set_indices()) hits.push_back(keys[i]);
  if (!hits.empty()) a.submit_unlock(hits);
  return *bits;
}

Bitmap wait_load(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                 const std::vector<MemoryObjPtr>& dsts, const std::string& who) {
  const TaskId id = a.submit_load_task(keys, dsts);
  std::optional<Bitmap> bits =
      poll_until([&] { return a.query_load_result(id); }, result_timeout());
  require(bits.has_value(), who + ": a load did not complete");
  return *bits;
}

bool pair_shares_store(L2AdapterInterface& first, L2AdapterInterface& second) {
  // A fixed key: every pair the kit builds has a key namespace of its own.
  const ObjectKey probe("shared-store-probe", "conformance-probe", 0);
  MemoryObjPtr obj = make_object(byte_layout(64));
  fill_bytes(obj->physical_bytes(), 0x5EED);
  store_all(second, {probe}, {obj}, "a probe store through a second instance");
  const bool shared = wait_lookup(first, {probe}, "a probe lookup").test(0);
  second.delete_keys({probe});
  return shared;
}

bool reference_pair_usable(const AdapterUnderTest& aut) {
  if (!aut.reference.make_pair) return false;
  if (!aut.reference.probe_shared_store) return true;
  auto [mine, theirs] = aut.reference.make_pair();
  require(mine && theirs, "the reference pair factory returned null");
  Closer close_mine{mine.get()}, close_theirs{theirs.get()};
  return pair_shares_store(*mine, *theirs);
}

namespace {

// `reader` finds and loads exactly what `writer` stored under `keys` (objects `objs`).
void require_reads(L2AdapterInterface& reader, const std::vector<ObjectKey>& keys,
                   const std::vector<MemoryObjPtr>& objs, const std::string& direction) {
  const Bitmap present = wait_lookup(reader, keys, direction);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    require(present.test(i), direction + ": key " + keys[i].to_string() + " (" +
                                 std::to_string(objs[i]->size()) + " bytes) is not found");
  }
  // The reader asks for the length that was stored, as a deployment does (the layout it loads
  // into): a narrowed byte object is read into a buffer of its size(), since a native connector
  // answers a GET of another length with a miss and the bridge's size ledger is per instance.
  std::vector<MemoryObjPtr> dsts;
  for (const auto& o : objs) {
    const bool bytes = o->layout().num_groups() == 1 && o->layout().dtypes()[0] == DType::kUInt8;
    dsts.push_back(make_object(bytes ? byte_layout(o->size()) : o->layout()));
    fill_bytes(dsts.back()->physical_bytes(), 0x5EED);
  }
  const Bitmap loaded = wait_load(reader, keys, dsts, direction);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string which = direction + ": key " + keys[i].to_string() + " (" +
                              std::to_string(objs[i]->size()) + " bytes)";
    require(loaded.test(i), which + " is not loaded");
    require(dsts[i]->size() == objs[i]->size(),
            which + " loads as " + std::to_string(dsts[i]->size()) + " bytes");
    require(same_bytes(dsts[i]->data(), objs[i]->data(), objs[i]->size()),
            which + " loads other bytes, " + bytes_difference(dsts[i]->bytes(), objs[i]->bytes()));
  }
}

}  // namespace

Verdict MatchesReference(const AdapterUnderTest& aut) {
  if (!aut.reference.make_pair) {
    return Verdict::not_supported(
        "the descriptor names no reference adapter over the same store "
        "(AdapterUnderTest::reference)");
  }
  if (aut.stored_bytes || aut.expected_load) {
    return Verdict::not_supported(
        "the adapter transforms what it stores (stored_bytes / expected_load): compare the "
        "adapter below the transform");
  }
  if (!reference_pair_usable(aut)) {
    return Verdict::not_supported("two instances (" + aut.reference.type +
                                  ") do not share a store: a probe stored through one is not "
                                  "found through the other");
  }
  return run_rc_property(rc_id("MatchesReference", aut), {.max_success = 8, .shrink = false}, [&] {
    auto [mine, theirs] = aut.reference.make_pair();
    require(mine && theirs, "the reference pair factory returned null");
    Closer close_mine{mine.get()}, close_theirs{theirs.get()};
    // Objects of every size class (0 B included), some narrowed, under keys one field apart.
    const std::size_t n = *uniform_in_range<std::size_t>(1, 7);
    std::vector<ObjectKey> keys = {*gen_object_key()};
    while (keys.size() < 2 * n) {
      ObjectKey k = *gen_key_varied_in(keys[*uniform_in_range<std::size_t>(0, keys.size())],
                                       *rc::gen::elementOf(std::vector<KeyField>(
                                           std::begin(kAllKeyFields), std::end(kAllKeyFields))));
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(std::move(k));
    }
    const std::size_t chunk = std::min<std::size_t>(current_profile().max_chunk_bytes, 2u << 20);
    std::vector<MemoryObjPtr> objs;
    for (std::size_t i = 0; i < 2 * n; ++i) {
      MemoryLayoutDesc layout = *gen_layout_of_any_size(aut.object_dtypes, chunk);
      MemoryObjPtr o = make_object(layout);
      fill_bytes(o->physical_bytes(), *gen_seed());
      // Byte objects may be narrowed (a serialized temp): the stored length is size().
      const bool bytes = layout.num_groups() == 1 && layout.dtypes()[0] == DType::kUInt8;
      if (bytes && o->size() > 1 && *uniform_in_range(0, 4) == 0) {
        o->set_used_size(*uniform_in_range<std::size_t>(0, o->size()));
      }
      objs.push_back(std::move(o));
    }
    const std::vector<ObjectKey> mine_keys(keys.begin(), keys.begin() + static_cast<long>(n));
    const std::vector<ObjectKey> their_keys(keys.begin() + static_cast<long>(n), keys.end());
    const std::vector<MemoryObjPtr> mine_objs(objs.begin(), objs.begin() + static_cast<long>(n));
    const std::vector<MemoryObjPtr> their_objs(objs.begin() + static_cast<long>(n), objs.end());
    const std::string type = aut.reference.type;
    store_all(*mine, mine_keys, mine_objs, "a store through the adapter");
    store_all(*theirs, their_keys, their_objs, "a store through the reference " + type);
    require_reads(*theirs, mine_keys, mine_objs,
                  "the reference " + type + " reading what the adapter stored");
    require_reads(*mine, their_keys, their_objs,
                  "the adapter reading what the reference " + type + " stored");
    // Deletes cross over too.
    if (!aut.capabilities.supports_delete) return;
    mine->delete_keys({their_keys[0]});
    theirs->delete_keys({mine_keys[0]});
    require(!wait_lookup(*theirs, {their_keys[0]}, "after a delete").test(0),
            "the reference " + type + " still finds " + their_keys[0].to_string() +
                " after the adapter deleted it");
    require(!wait_lookup(*mine, {mine_keys[0]}, "after a delete").test(0),
            "the adapter still finds " + mine_keys[0].to_string() + " after the reference " + type +
                " deleted it");
  });
}

}  // namespace lmcache::conformance_internal::adapter_properties
