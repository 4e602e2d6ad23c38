#include "lmcache/fault/internal/campaign_invariants.h"

#include <algorithm>
#include <utility>

#include "lmcache/fault/campaign.h"
#include "lmcache/fault/fault_rng.h"

namespace lmcache::fault_internal {

namespace invariant = fault::invariant;
using fault::FaultEffect;
using fault::Fnv1a64;
using fault::splitmix64;

std::string task_text(const CampaignTask& t) {
  return std::string(op_name(t.kind)) + " task #" + std::to_string(t.serial) + " (wrapper id " +
         (t.submitted ? std::to_string(t.id) : std::string("-")) + ", op " + std::to_string(t.op) +
         ", keys " + keys_text(t.key_idx) + ")";
}

bool damage_past_frame(const CampaignTask& t, const fault::FaultEvent& e) {
  if (!e.damaged_key || !e.first_damaged_byte) return false;
  for (std::size_t p = 0; p < t.keys.size() && p < t.frame_bytes.size(); ++p) {
    if (t.keys[p] == *e.damaged_key) return *e.first_damaged_byte >= t.frame_bytes[p];
  }
  return false;
}

Attribution attribute(const CampaignTask& t) {
  Attribution a;
  for (const std::string& s : t.storage_faults) {
    a.storage_disturbed = true;
    a.texts.push_back("storage fault " + s);
  }
  for (const auto& e : t.events) {
    if (e.effect == FaultEffect::kNone) continue;
    if (damage_past_frame(t, e)) {
      ++a.damage_past_frame;
      a.texts.push_back(e.to_string() + " [past the frame: harmless]");
      continue;
    }
    a.texts.push_back(e.to_string());
    std::set<std::size_t> positions;
    for (const auto& k : e.keys) {
      for (std::size_t i = 0; i < t.keys.size(); ++i) {
        if (t.keys[i] == k) positions.insert(i);
      }
    }
    for (const MemoryObj* obj : e.objects) {
      for (std::size_t i = 0; i < t.objects.size() && e.seq >= t.since; ++i) {
        if (t.objects[i].get() == obj) positions.insert(i);
      }
    }
    switch (e.effect) {
      case FaultEffect::kFailsTask:
        a.fails_task = true;
        break;
      case FaultEffect::kMayFail:
        a.may_fail = true;
        break;
      case FaultEffect::kHang:
        a.hang = true;
        break;
      case FaultEffect::kMiss:
        a.miss.insert(positions.begin(), positions.end());
        break;
      case FaultEffect::kCorruptsData:
        a.corrupt.insert(positions.begin(), positions.end());
        if (e.effective) a.corrupt_effective.insert(positions.begin(), positions.end());
        break;
      case FaultEffect::kPoisonsStored:
        a.poison.insert(positions.begin(), positions.end());
        break;
      case FaultEffect::kNone:
        break;
    }
  }
  return a;
}

std::uint64_t fingerprint_of(const CampaignTask& t) {
  Fnv1a64 h;
  h.add_u64(t.serial).add_u64(static_cast<std::uint64_t>(t.kind));
  for (std::size_t i : t.key_idx) h.add_u64(i);
  if (t.store_result) h.add_u64(t.store_result->is_successful() ? 1 : 2);
  if (t.bitmap) h.add(t.bitmap->to_string());
  for (const auto& e : t.events) h.add_u64(static_cast<std::uint64_t>(e.kind));
  return splitmix64(h.value());
}

void Judge::store(CampaignTask& t, const Attribution& a) {
  const L2StoreResult& r = *t.store_result;
  if (r.is_successful()) {
    if (a.hang) {
      ledger_.violate(
          invariant::kHungTaskFails,
          task_text(t) + " reported success although it was hung on purpose: " + a.describe());
    }
    if (a.fails_task) {
      ledger_.violate(invariant::kInjectedFaultNeverSuccess,
                      task_text(t) + " reported success although an injected fault must fail it: " +
                          a.describe());
    }
    for (std::size_t p = 0; p < t.key_idx.size(); ++p) {
      KeyState& st = model_[t.key_idx[p]];
      st.present = true;
      st.poisoned = a.poison.count(p) > 0;
      st.last_store_failed = false;
      st.may_be_lost = false;
      st.may_be_gone = false;
    }
    return;
  }
  if (a.hang) ledger_.pass(invariant::kHungTaskFails);
  if (a.fails_task) ledger_.pass(invariant::kInjectedFaultNeverSuccess);
  bool explained = a.fails_task || a.may_fail || a.hang || !a.poison.empty() || a.storage_disturbed;
  if (!explained) {
    // The inner adapter may be full: then a failure is legitimate.
    std::uint64_t need = 0;
    for (std::size_t i : t.key_idx) need += workload_.key(i).serialized_bytes;
    AdapterUsage u = usage_();
    explained = u.total_capacity_bytes > 0 && u.total_bytes_used + need > u.total_capacity_bytes;
  }
  ledger_.check(explained, invariant::kStoreFailureExplained,
                [&] { return task_text(t) + " failed with no injected fault to explain it"; });
  for (std::size_t i : t.key_idx) model_[i] = KeyState{false, false, true, false, false};
}

void Judge::check_miss_honoured(const CampaignTask& t, const Attribution& a, std::size_t p,
                                const char* what) {
  if (!a.miss.count(p)) return;
  ledger_.check(!t.bitmap->test(p), invariant::kInjectedFaultNeverSuccess, [&] {
    return task_text(t) + ": key " + std::to_string(t.key_idx[p]) + " " + what + ": " +
           a.describe();
  });
}

void Judge::learn_storage_loss(std::size_t key_index) {
  ledger_.update([](fault::CampaignSummary& s) { ++s.storage_losses; });
  KeyState& st = model_[key_index];
  // A key a storage fault removed is absent from now on: later loads and lookups must miss it.
  if (st.may_be_gone) st = KeyState{};
}

bool Judge::check_bitmap_size(const CampaignTask& t) {
  const std::size_t bits = t.bitmap->size();
  const bool ok = bits == t.keys.size();
  ledger_.check(ok, invariant::kBitmapSize, [&] {
    return task_text(t) + ": bitmap of " + std::to_string(bits) + " bits for " +
           std::to_string(t.keys.size()) + " keys";
  });
  return ok;
}

void Judge::load(CampaignTask& t, const Attribution& a) {
  const Bitmap& bits = *t.bitmap;
  const std::size_t n = t.keys.size();
  if (a.damage_past_frame > 0) {
    ledger_.update([&](fault::CampaignSummary& s) { s.damage_past_frame += a.damage_past_frame; });
  }
  if (!check_bitmap_size(t)) return;
  if (a.hang) {
    ledger_.check(bits.none(), invariant::kHungTaskFails, [&] {
      return task_text(t) + " loaded " + bits.to_string() +
             " although it was hung on purpose: " + a.describe();
    });
  }
  if (a.fails_task) {
    ledger_.check(bits.none(), invariant::kInjectedFaultNeverSuccess, [&] {
      return task_text(t) + " loaded " + bits.to_string() +
             " although an injected fault must fail the whole load: " + a.describe();
    });
  }
  bool batch_may_fail = a.fails_task || a.may_fail || a.hang || a.storage_disturbed;
  for (std::size_t i : t.key_idx) batch_may_fail |= model_[i].poisoned;
  // An integrity serde fails the deserialize of a damaged frame, hence the whole load.
  if (serde_detects_corruption_) batch_may_fail |= !a.corrupt_effective.empty();
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t ki = t.key_idx[p];
    const KeyState& st = model_[ki];
    check_miss_honoured(t, a, p, "was dropped on purpose but its bit is set");
    if (serde_detects_corruption_ && a.corrupt_effective.count(p)) {
      if (bits.test(p)) {
        ledger_.violate(invariant::kCorruptionNeverLoads,
                        task_text(t) + ": key " + std::to_string(ki) +
                            " loaded with success although its frame was damaged and the serde "
                            "checks integrity: " +
                            a.describe());
      } else {
        ledger_.pass(invariant::kCorruptionNeverLoads);
        ledger_.update([](fault::CampaignSummary& s) { ++s.corruptions_detected; });
      }
      continue;
    }
    if (!bits.test(p)) {
      if (st.present) {
        const bool explained = batch_may_fail || a.miss.count(p) > 0;
        const bool lost = st.may_be_lost || st.may_be_gone;
        ledger_.check(explained || lost, invariant::kMissExplained, [&] {
          return task_text(t) + ": stored key " + std::to_string(ki) +
                 " was not loaded and no injected fault explains it";
        });
        if (!explained && lost) learn_storage_loss(ki);
      } else {
        ledger_.pass(st.last_store_failed ? invariant::kFailedStoreInvisible
                                          : invariant::kAbsentKeyNotFound);
      }
      continue;
    }
    if (!st.present) {
      const char* inv =
          st.last_store_failed ? invariant::kFailedStoreInvisible : invariant::kAbsentKeyNotFound;
      ledger_.violate(inv,
                      task_text(t) + ": key " + std::to_string(ki) + " loaded although " +
                          (st.last_store_failed ? "its last store failed" : "it was never stored") +
                          " (model: absent)");
      continue;
    }
    const auto& expected = workload_.key(ki).expected;
    auto got = std::as_const(*t.objects[p]).bytes();
    const bool match =
        got.size() == expected.size() && std::equal(got.begin(), got.end(), expected.begin());
    if (match) {
      ledger_.pass(invariant::kLoadedDataMatches);
      if (serde_injective_ && a.corrupt_effective.count(p)) {
        ledger_.violate(invariant::kCorruptionDetected,
                        task_text(t) + ": key " + std::to_string(ki) +
                            " carries an effective injected corruption but its bytes equal the "
                            "expected ones; the data check is blind: " +
                            a.describe());
      }
      continue;
    }
    if (a.corrupt.count(p) || st.poisoned) {
      ledger_.pass(invariant::kCorruptionDetected);
      ledger_.update([](fault::CampaignSummary& s) { ++s.corruptions_caught; });
      continue;
    }
    std::size_t first = 0;
    while (first < got.size() && first < expected.size() && got[first] == expected[first]) ++first;
    ledger_.violate(invariant::kLoadedDataMatches,
                    task_text(t) + ": key " + std::to_string(ki) +
                        " loaded with success but its bytes differ from the expected round trip "
                        "(first difference at byte " +
                        std::to_string(first) + " of " + std::to_string(expected.size()) + "); " +
                        a.describe());
  }
}

std::vector<ObjectKey> Judge::lookup(CampaignTask& t, const Attribution& a) {
  const Bitmap& bits = *t.bitmap;
  const std::size_t n = t.keys.size();
  if (!check_bitmap_size(t)) return {};
  std::vector<ObjectKey> unlock;
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t ki = t.key_idx[p];
    const KeyState& st = model_[ki];
    check_miss_honoured(t, a, p, "was hidden on purpose but lookup reports it");
    if (bits.test(p)) {
      unlock.push_back(t.keys[p]);
      if (!st.present) {
        ledger_.violate(
            st.last_store_failed ? invariant::kFailedStoreInvisible : invariant::kAbsentKeyNotFound,
            task_text(t) + ": lookup found key " + std::to_string(ki) + " although " +
                (st.last_store_failed ? "its last store failed" : "it was never stored"));
      }
    } else if (st.present) {
      const bool explained = a.miss.count(p) > 0 || a.fails_task || a.storage_disturbed;
      ledger_.check(explained || st.may_be_gone, invariant::kMissExplained, [&] {
        return task_text(t) + ": lookup misses stored key " + std::to_string(ki) +
               " and no injected fault explains it";
      });
      if (!explained && st.may_be_gone) learn_storage_loss(ki);
    } else {
      ledger_.pass(st.last_store_failed ? invariant::kFailedStoreInvisible
                                        : invariant::kAbsentKeyNotFound);
    }
  }
  return unlock;
}

}  // namespace lmcache::fault_internal
