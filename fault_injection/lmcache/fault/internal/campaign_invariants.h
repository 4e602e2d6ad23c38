// File: lmcache/fault/internal/campaign_invariants.h
//
// Internal to the campaign: the invariants a completed task is judged by. A task's outcome
// (store result or bitmap, loaded bytes) is compared with the campaign's model and with the
// faults attributed to it: what they oblige the stack to report (a failure, a miss, a detected
// corruption) and what they explain. Every check ends in the Ledger.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/core/bitmap.h"
#include "lmcache/core/l2_store_result.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/fault/fault_log.h"
#include "lmcache/fault/internal/campaign_ledger.h"
#include "lmcache/fault/internal/campaign_workload.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache::fault_internal {

// One operation of the campaign, from submit to judgement.
struct CampaignTask {
  std::uint64_t serial = 0;
  std::uint64_t since = 0;  // first FaultLog seq that may concern this task
  OpKind kind = OpKind::kStore;
  TaskId id = 0;
  bool submitted = false;
  bool completed = false;
  bool hung = false;
  std::uint64_t op = 0;
  std::vector<std::size_t> key_idx;
  std::vector<ObjectKey> keys;
  // Per key: the bytes of its frame (what a fault-free serialize writes), all the deserializer
  // reads of a loaded object; damage that starts past it changes nothing (damage_past_frame).
  std::vector<std::size_t> frame_bytes;
  std::vector<MemoryObjPtr> objects;
  std::optional<L2StoreResult> store_result;
  std::optional<Bitmap> bitmap;
  std::vector<fault::FaultEvent> events;
  // Real storage faults that struck while it was in flight (StorageStrike::detail).
  std::vector<std::string> storage_faults;
};

// "load task #12 (wrapper id 7, op 40, keys [1,4])".
std::string task_text(const CampaignTask& t);

// What the events attributed to one task oblige it to report. Positions index the task's keys.
struct Attribution {
  bool fails_task = false;
  bool may_fail = false;
  bool hang = false;
  // A real storage fault disturbed it: it may fail, and may miss any key.
  bool storage_disturbed = false;
  std::set<std::size_t> miss;
  std::set<std::size_t> corrupt;
  std::set<std::size_t> corrupt_effective;
  std::set<std::size_t> poison;
  // Events whose damage lay past the frame of their key (damage_past_frame()): no obligation.
  std::size_t damage_past_frame = 0;
  std::vector<std::string> texts;

  std::string describe() const {
    if (texts.empty()) return "no fault attributed";
    std::string out;
    for (const auto& t : texts) out += (out.empty() ? "" : "; ") + t;
    return out;
  }
};

// damage_past_frame()
//
// Whether `e` damaged one loaded object of `t` only at or past the end of that key's frame
// (e.first_damaged_byte >= t.frame_bytes of e.damaged_key's position). A stored object can be
// longer than its frame (serialize_wrong_count's "one byte long" stores one byte more), and
// the deserializer reads only the frame: such damage (a narrowing truncate to the frame's
// length, a corrupt or zeroed byte after it) leaves every byte it reads intact, so the load
// may succeed with the right bytes. False for any other event, and when the key, the offset
// or the frame's length is unknown (the damage then counts as reaching the frame).
bool damage_past_frame(const CampaignTask& t, const fault::FaultEvent& e);

// attribute()
//
// What the events attributed to `t` oblige it to report; positions index t.keys. An event
// whose damage lay past the frame (damage_past_frame()) obliges nothing: it is counted in
// Attribution::damage_past_frame and named in the texts.
Attribution attribute(const CampaignTask& t);

// fingerprint_of()
//
// An order-independent digest of a judged task: the task, its outcome and its faults.
std::uint64_t fingerprint_of(const CampaignTask& t);

class Judge {
 public:
  // `model` is updated by what completed stores establish. `usage` reports the stack's L2
  // usage (a store failure on a full inner adapter is legitimate). `serde_injective`: the
  // serde maps different bytes to different bytes, so an effective corruption must show.
  // `serde_detects_corruption`: the serde has an integrity stage (checksum, aesgcm), so an
  // effective corruption or truncation must fail the load, never load as success.
  Judge(Ledger& ledger, const Workload& workload, std::vector<KeyState>& model,
        std::function<AdapterUsage()> usage, bool serde_injective,
        bool serde_detects_corruption = false)
      : ledger_(ledger),
        workload_(workload),
        model_(model),
        usage_(std::move(usage)),
        serde_injective_(serde_injective),
        serde_detects_corruption_(serde_detects_corruption) {}

  void store(CampaignTask& t, const Attribution& a);
  void load(CampaignTask& t, const Attribution& a);
  // Returns the keys the lookup locked, which the driver must unlock.
  std::vector<ObjectKey> lookup(CampaignTask& t, const Attribution& a);

 private:
  // A stored key missed because a real storage fault took it (KeyState::may_be_lost or
  // may_be_gone), with no other fault to explain the miss: counted, and a removed key becomes
  // absent in the model.
  void learn_storage_loss(std::size_t key_index);
  // The kBitmapSize invariant of a load or lookup result: one bit per key.
  bool check_bitmap_size(const CampaignTask& t);
  // A position a fault hid or dropped (a.miss) must not be reported: the bit `p` is clear.
  void check_miss_honoured(const CampaignTask& t, const Attribution& a, std::size_t p,
                           const char* what);

  Ledger& ledger_;
  const Workload& workload_;
  std::vector<KeyState>& model_;
  std::function<AdapterUsage()> usage_;
  bool serde_injective_;
  bool serde_detects_corruption_;
};

}  // namespace lmcache::fault_internal
