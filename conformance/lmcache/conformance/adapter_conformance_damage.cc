// AdapterConformance.StoredDamageContained: objects damaged in the store underneath an adapter
// (docs/l2-adapter.md, "Damaged storage"). A disk, a crash mid-write, another writer or an
// operator leaves objects cut short, a byte longer, replaced by something of another kind, or
// changed in place. An adapter that takes such an object for the one it stored hands the
// engine bytes that were never written as KV values, or hangs on what it opens; neither may
// happen, and one damaged object must not take the adapter down for the keys beside it.
//
// Each case, for every kind of damage, over a fresh adapter and store from the descriptor's
// make_damageable(): stores a batch (1-4 keys over every key field, one layout of 1 B to chunk
// size), damages every stored object, loads the batch into destinations filled with a marker,
// then stores and loads a fresh batch of the same layout.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// How long one load of damaged objects may take: the bound docs/l2-adapter.md sets a remote
// adapter for a peer that stops answering holds for a store that lies too.
std::chrono::milliseconds damage_timeout() { return scaled(std::chrono::seconds(30)); }

// Every kind; a replacement three times over, so that a damage function that rotates through
// several replacements (the kit's fs one: a FIFO, a directory, a symbolic link) shows each.
constexpr StoredDamage kAllDamages[] = {StoredDamage::kTruncated, StoredDamage::kExtended,
                                        StoredDamage::kFlipped,   StoredDamage::kReplaced,
                                        StoredDamage::kReplaced,  StoredDamage::kReplaced};

void run_case(const AdapterUnderTest& aut, StoredDamage damage, const MemoryLayoutDesc& layout,
              std::size_t n) {
  const std::vector<ObjectKey> all_keys = key_family(*gen_seed(), 2 * n);
  const std::vector<ObjectKey> keys(all_keys.begin(), all_keys.begin() + n);
  const std::vector<ObjectKey> fresh(all_keys.begin() + n, all_keys.end());
  const std::string who = std::to_string(n) + " object(s) of " +
                          std::to_string(layout.total_bytes()) + " bytes " +
                          std::string(stored_damage_name(damage)) + " in the store: ";

  DamageableAdapter d = aut.make_damageable();
  require(d.adapter != nullptr && d.damage != nullptr,
          "make_damageable() returned no adapter or no damage function");
  L2AdapterInterface& a = *d.adapter;
  Closer closer{&a};

  const std::vector<MemoryObjPtr> objs = filled_objects(layout, n);
  store_all(a, keys, objs, who + "storing the batch before the damage:");
  const std::size_t damaged = d.damage(damage);
  require(damaged > 0, who + "the damage function found none of the " + std::to_string(n) +
                           " stored object(s) in the store");

  std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, n);
  const TaskId load_id = a.submit_load_task(keys, dsts);
  const std::optional<Bitmap> loaded =
      poll_until([&] { return a.query_load_result(load_id); }, damage_timeout());
  require(loaded.has_value(), who + "the load did not complete within " +
                                  std::to_string(damage_timeout().count()) +
                                  " ms (a damaged object must not hang the adapter)");
  const bool must_miss = damage != StoredDamage::kFlipped || aut.detects_changed_bytes;
  for (std::size_t i = 0; i < n; ++i) {
    if (!loaded->test(i)) continue;
    require(!must_miss,
            who + "key " + std::to_string(i) + " (" + keys[i].to_string() +
                ") is reported loaded, but what the store holds for it is not what was stored" +
                (damage == StoredDamage::kFlipped
                     ? " (the descriptor says the adapter detects bytes changed in place)"
                     : ""));
  }

  // The adapter goes on serving other keys of the same layout.
  const std::vector<MemoryObjPtr> others = filled_objects(layout, n);
  store_all(a, fresh, others, who + "storing a fresh batch after the damage:");
  std::vector<MemoryObjPtr> back = zeroed_objects(layout, n);
  const Bitmap hits = wait_load(a, fresh, back, who + "loading a fresh batch after the damage:");
  for (std::size_t i = 0; i < n; ++i) {
    require(hits.test(i), who + "a fresh key stored after the damage (" + fresh[i].to_string() +
                              ") does not load: the damage took the adapter down");
    const MemoryObjPtr want = expected_load_of(aut, *others[i]);
    require(
        back[i]->size() == want->size() && same_bytes(back[i]->data(), want->data(), want->size()),
        who + "a fresh key stored after the damage (" + fresh[i].to_string() +
            ") loads other bytes than it stored");
  }
  a.close();
}

}  // namespace

std::vector<MemoryObjPtr> filled_objects(const MemoryLayoutDesc& layout, std::size_t n) {
  std::vector<MemoryObjPtr> objs;
  for (std::size_t i = 0; i < n; ++i) {
    objs.push_back(make_object(layout));
    fill_bytes(objs.back()->physical_bytes(), *gen_seed());
  }
  return objs;
}

Verdict StoredDamageContained(const AdapterUnderTest& aut) {
  if (!aut.make_damageable) {
    return Verdict::not_supported(
        "the descriptor gives no way to damage what the adapter stored "
        "(AdapterUnderTest::make_damageable)");
  }
  return run_rc_property(
      rc_id("StoredDamageContained", aut), {.max_success = 2, .shrink = false}, [&] {
        const std::size_t n = *uniform_in_range<std::size_t>(1, 5);  // 1-4 keys
        const std::size_t chunk =
            std::min<std::size_t>(current_profile().max_chunk_bytes, std::size_t{4} << 20);
        // One layout for every object (a serde wrapper requires one per submit), never empty: an
        // empty object has no bytes to cut or change.
        MemoryLayoutDesc layout = *gen_layout_of_any_size(aut.object_dtypes, chunk);
        while (layout.total_bytes() == 0) {
          layout = *gen_layout_of_any_size(aut.object_dtypes, chunk);
        }
        for (StoredDamage damage : kAllDamages) run_case(aut, damage, layout, n);
      });
}

}  // namespace lmcache::conformance_internal::adapter_properties
