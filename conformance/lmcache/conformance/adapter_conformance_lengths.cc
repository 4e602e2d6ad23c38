// AdapterConformance.OtherLengthLoadsContained: loads that ask for another length than the one
// stored (docs/l2-adapter.md, "Loads of another length"). A deployment asks for the length its
// layout gives; after a model or format change, or when another writer stored the key, that is
// not the stored length. A shorter buffer must miss (a hit would be a cut-off object), a longer
// one misses or loads exactly the stored bytes (size() included), nothing is written past a
// buffer, and the other keys of the batch and of every later load still load their own bytes.
//
// The lengths are asked through the adapter that stored the keys and, where the descriptor names
// a reference over the same store (AdapterUnderTest::reference), through the adapter under test
// for keys the reference stored: a fresh instance knows nothing of their lengths, so the request
// reaches the store as it is (a native connector's GET of another length). A connector that
// leaves the unread value on its connection answers a later key with it; a connector that reads
// a prefix reports a cut-off object as loaded.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// How a load's buffer differs from the stored length.
enum class Ask { kExact, kOneShort, kHalf, kEmpty, kOneLong, kDouble, kPageLong };

const char* ask_name(Ask a) {
  switch (a) {
    case Ask::kExact:
      return "the stored length";
    case Ask::kOneShort:
      return "one byte short";
    case Ask::kHalf:
      return "half the stored length";
    case Ask::kEmpty:
      return "0 bytes";
    case Ask::kOneLong:
      return "one byte longer";
    case Ask::kDouble:
      return "twice the stored length";
    case Ask::kPageLong:
      return "4 KiB longer";
  }
  return "?";
}

std::size_t asked_length(Ask a, std::size_t stored) {
  switch (a) {
    case Ask::kExact:
      return stored;
    case Ask::kOneShort:
      return stored - 1;
    case Ask::kHalf:
      return stored / 2;
    case Ask::kEmpty:
      return 0;
    case Ask::kOneLong:
      return stored + 1;
    case Ask::kDouble:
      return 2 * stored;
    case Ask::kPageLong:
      return stored + 4096;
  }
  return stored;
}

// A stored byte object's length: every size class, chunk-sized ones at the depth's bound.
std::size_t gen_stored_length() {
  const std::size_t chunk = std::min<std::size_t>(current_profile().max_chunk_bytes, 4u << 20);
  switch (*uniform_in_range(0, 6)) {
    case 0:
      return *uniform_in_range<std::size_t>(0, 18);
    case 1:
      return *gen_element_count(64u << 10);
    case 2:
      return chunk > 0 ? *gen_chunk_bytes(chunk) : *gen_element_count(1u << 20);
    default:
      return *gen_element_count(4096);
  }
}

struct Stored {
  ObjectKey key;
  MemoryObjPtr obj;  // what was stored: obj->size() bytes
};

// One load of `keys` through `reader`: each key of `asks` into a buffer of the asked length (a
// guarded byte object), then every key again at its stored length. `absent` keys were never
// stored and must miss.
void check_loads(L2AdapterInterface& reader, const std::vector<Stored>& stored,
                 const std::vector<Ask>& asks, const std::vector<ObjectKey>& absent,
                 const std::string& who) {
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> dsts;
  std::vector<GuardedObject> guarded;
  std::vector<std::vector<std::byte>> before;
  guarded.reserve(stored.size() + absent.size());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    const std::size_t n = asked_length(asks[i], stored[i].obj->size());
    // Guards as large as the stored object: an overrun by the whole object stays in them.
    guarded.push_back(GuardedObject::Bytes(n, *gen_seed(), stored[i].obj->size() + 64));
    keys.push_back(stored[i].key);
  }
  for (const ObjectKey& k : absent) {
    guarded.push_back(GuardedObject::Bytes(*uniform_in_range<std::size_t>(0, 4097), *gen_seed()));
    keys.push_back(k);
  }
  for (const GuardedObject& g : guarded) {
    dsts.push_back(g.obj());
    before.push_back(g.snapshot());
  }
  const Bitmap loaded = wait_load(reader, keys, dsts, who);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const bool is_absent = i >= stored.size();
    const std::string which = who + ": key " + keys[i].to_string() +
                              (is_absent ? std::string(" (never stored)")
                                         : " (" + std::to_string(stored[i].obj->size()) +
                                               " bytes stored, asked " + ask_name(asks[i]) + ": " +
                                               std::to_string(guarded[i]->physical_size()) + ")");
    const std::string guards = guarded[i].check_guards();
    require(guards.empty(), which + ": the load wrote outside the buffer: " + guards);
    if (is_absent) {
      require(!loaded.test(i), which + " is reported loaded");
      require(guarded[i].check_payload_unchanged(before[i], 0, guarded[i]->physical_size()).empty(),
              which + ": a miss changed its destination");
      continue;
    }
    const MemoryObj& src = *stored[i].obj;
    const std::size_t asked = guarded[i]->physical_size();
    if (asked < src.size()) {
      require(!loaded.test(i), which +
                                   " is reported loaded: a buffer shorter than the object "
                                   "cannot hold it (a cut-off object)");
      continue;
    }
    if (asks[i] == Ask::kExact) {
      require(loaded.test(i), which + " is not loaded");
    }
    if (!loaded.test(i)) continue;  // a longer buffer may miss
    require(guarded[i]->size() == src.size(), which + " loads as " +
                                                  std::to_string(guarded[i]->size()) +
                                                  " bytes (size() must be the stored length)");
    require(same_bytes(guarded[i]->data(), src.data(), src.size()),
            which + " loads other bytes, " + bytes_difference(guarded[i]->bytes(), src.bytes()));
  }
}

// Every stored key again, each at its stored length, in another order: all load their own
// bytes (a reader left out of step by the loads above answers a key with another's value).
void check_exact_reload(L2AdapterInterface& reader, std::vector<Stored> stored,
                        const std::string& who) {
  std::rotate(stored.begin(),
              stored.begin() + static_cast<long>(*uniform_in_range<std::size_t>(0, stored.size())),
              stored.end());
  std::reverse(stored.begin(), stored.end());
  check_loads(reader, stored, std::vector<Ask>(stored.size(), Ask::kExact), {},
              who + ", then every key at its stored length");
}

std::vector<Ask> gen_asks(const std::vector<Stored>& stored) {
  std::vector<Ask> asks;
  for (const Stored& s : stored) {
    // Shorter asks need a length to cut; the rest fit any object.
    const std::vector<Ask> fits =
        s.obj->size() == 0
            ? std::vector<Ask>{Ask::kExact, Ask::kOneLong, Ask::kDouble, Ask::kPageLong}
            : std::vector<Ask>{Ask::kExact,   Ask::kOneShort, Ask::kHalf,    Ask::kEmpty,
                               Ask::kOneLong, Ask::kDouble,   Ask::kPageLong};
    asks.push_back(*rc::gen::elementOf(fits));
  }
  return asks;
}

std::vector<Stored> gen_objects(const std::vector<ObjectKey>& keys) {
  std::vector<Stored> out;
  for (const ObjectKey& k : keys) {
    MemoryObjPtr o = make_object(byte_layout(gen_stored_length()));
    fill_bytes(o->physical_bytes(), *gen_seed());
    out.push_back({k, std::move(o)});
  }
  return out;
}

// `n` distinct keys, each one field away from an earlier one (keys that share all but one
// field must not share a stored value).
std::vector<ObjectKey> gen_keys(std::size_t n) {
  std::vector<ObjectKey> keys = {*gen_object_key()};
  while (keys.size() < n) {
    ObjectKey k = *gen_key_varied_in(keys[*uniform_in_range<std::size_t>(0, keys.size())],
                                     *rc::gen::elementOf(std::vector<KeyField>(
                                         std::begin(kAllKeyFields), std::end(kAllKeyFields))));
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(std::move(k));
  }
  return keys;
}

}  // namespace

Verdict OtherLengthLoadsContained(const AdapterUnderTest& aut) {
  if (aut.stored_bytes || aut.expected_load) {
    return Verdict::not_supported(
        "the adapter transforms what it stores (stored_bytes / expected_load): the stored "
        "length is not the object's");
  }
  if (std::find(aut.object_dtypes.begin(), aut.object_dtypes.end(), DType::kUInt8) ==
      aut.object_dtypes.end()) {
    return Verdict::not_supported("the adapter declares no uint8 objects (object_dtypes)");
  }
  const bool pair = reference_pair_usable(aut);
  return run_rc_property(
      rc_id("OtherLengthLoadsContained", aut), {.max_success = 8, .shrink = false}, [&] {
        const std::size_t n = *uniform_in_range<std::size_t>(2, 10);
        const std::vector<ObjectKey> all_keys = gen_keys(2 * n + 2);
        const std::vector<ObjectKey> keys(all_keys.begin(), all_keys.end() - 2);
        const std::vector<ObjectKey> absent(all_keys.end() - 2, all_keys.end());
        const std::vector<Stored> objects = gen_objects(keys);
        const std::vector<Stored> mine_stored(objects.begin(), objects.begin() + n);
        const std::vector<Stored> their_stored(objects.begin() + n, objects.end());
        auto keys_of = [](const std::vector<Stored>& s) {
          std::vector<ObjectKey> k;
          for (const Stored& x : s) k.push_back(x.key);
          return k;
        };
        auto objs_of = [](const std::vector<Stored>& s) {
          std::vector<MemoryObjPtr> o;
          for (const Stored& x : s) o.push_back(x.obj);
          return o;
        };

        // Through the adapter that stored them.
        L2AdapterPtr a = aut.make();
        require(a != nullptr, "make() returned null");
        Closer close_a{a.get()};
        store_all(*a, keys_of(mine_stored), objs_of(mine_stored), "a store");
        check_loads(*a, mine_stored, gen_asks(mine_stored), absent,
                    "a load through the adapter that stored the keys");
        check_exact_reload(*a, mine_stored, "a load through the adapter that stored the keys");
        if (!pair) return;

        // Through the adapter under test, of keys the reference stored in the same store.
        auto [mine, theirs] = aut.reference.make_pair();
        require(mine && theirs, "the reference pair factory returned null");
        Closer close_mine{mine.get()}, close_theirs{theirs.get()};
        store_all(*theirs, keys_of(their_stored), objs_of(their_stored),
                  "a store through the reference " + aut.reference.type);
        const std::string who =
            "a load through the adapter of keys the reference " + aut.reference.type + " stored";
        check_loads(*mine, their_stored, gen_asks(their_stored), absent, who);
        check_exact_reload(*mine, their_stored, who);
      });
}

}  // namespace lmcache::conformance_internal::adapter_properties
