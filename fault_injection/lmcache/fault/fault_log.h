// File: lmcache/fault/fault_log.h
//
// The vocabulary of fault injection and the record of what was injected.
//
//   - FaultKind names every fault this library can inject; fault_kind_info() gives each one's
//     layer, its default FaultEffect and how a consumer can detect it.
//   - FaultEffect is what an injected fault obliges the stack to report. The campaign's
//     invariants are written in terms of effects, not kinds: "an event with kFailsTask
//     attributed to a task means the task must report failure".
//   - FaultLog is a thread-safe, append-only record of FaultEvents. Every injector records its
//     event *before* the effect can become visible to a consumer (before it publishes the
//     completion, throws, or returns), so whoever observes a completion and then drains the
//     log sees every event that shaped it.
//   - AttributionScope tags the events recorded on the current thread while it lives: the
//     campaign driver opens one around each submit, so faults injected synchronously inside
//     that call (an L1 allocation failure, an under-reported estimate, a thrown submit) can be
//     tied to the task even though they carry no key.
//   - InjectedFault is the exception every injected throw uses, so a consumer can tell an
//     injected failure from a genuine one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache::fault {

enum class FaultKind : std::uint8_t {
  // FaultInjectL2Adapter (the L2 layer).
  kLoadDrop,        // Python's rule: rate / gap_indices / gap_tail_ratios / drop_chunk_hashes
  kStoreFail,       // the store task fails and its keys are not left visible
  kSubmitThrow,     // submit_store/load/lookup throws InjectedFault
  kLookupMiss,      // a present key is reported absent by lookup (and its lock released)
  kCorrupt,         // bits flipped in a loaded buffer; the bit stays set
  kTruncate,        // a loaded buffer narrowed (set_used_size) or its tail zeroed
  kDelay,           // a completion is published late
  kReorder,         // a completion is held and published after the next one
  kCoalesce,        // a completion is held and published together with the next one
  kSpuriousWakeup,  // an eventfd is signalled with no result behind it
  kHang,            // a task never completes (until close())
  kSlowClose,       // close() sleeps before shutting down
  // Hooks in the other layers.
  kL1AllocFail,          // L1 buffer factory throws std::bad_alloc
  kSerializeThrow,       // Serializer::serialize throws
  kSerializeWrongCount,  // Serializer::serialize returns a wrong byte count
  kEstimateUnderReport,  // estimate_serialized_size under-reports
  kDeserializeThrow,     // Deserializer::deserialize throws
  kSerdeSubmitThrow,     // SerdeProcessor::submit_serialize / submit_deserialize throws
};
inline constexpr std::size_t kFaultKindCount = 18;

// FaultEffect
//
// What an event obliges the stack to report for the task (or keys) it is attributed to.
enum class FaultEffect : std::uint8_t {
  kNone,           // timing only (delay, reorder, coalesce, spurious wake-up, slow close)
  kFailsTask,      // the whole task must fail (store: !success; load/lookup: no bit set)
  kMayFail,        // the task may fail or succeed; if it succeeds its data is still right
  kMiss,           // the event's keys must be reported absent (bit clear)
  kCorruptsData,   // the event's keys may load with the bit set but wrong bytes
  kPoisonsStored,  // a store may succeed with wrong bytes stored: later loads of the event's
                   // keys may miss (the serde rejects them) or carry wrong bytes
  kHang,           // the task must not complete before close(); close() must fail it
};

// FaultKindInfo
//
// Static description of a kind: its stable name (used on the command line and in JSON), the
// layer that injects it, its usual effect and how a consumer can notice it.
struct FaultKindInfo {
  FaultKind kind;
  std::string_view name;
  std::string_view layer;
  FaultEffect effect;
  std::string_view detectability;
};

// fault_kind_info()
//
// The description of `kind`.
const FaultKindInfo& fault_kind_info(FaultKind kind);

// all_fault_kinds()
//
// Every kind, in enum order.
std::span<const FaultKindInfo> all_fault_kinds();

// fault_kind_name() / parse_fault_kind()
//
// "load_drop", "store_fail", ...; parse_fault_kind() returns nullopt for an unknown name.
std::string_view fault_kind_name(FaultKind kind);
std::optional<FaultKind> parse_fault_kind(std::string_view name);

// fault_effect_name()
//
// "none", "fails_task", "may_fail", "miss", "corrupts_data", "poisons_stored", "hang".
std::string_view fault_effect_name(FaultEffect effect);

// FaultEvent
//
// One injected fault. `keys` are the keys it affects (key-level effects apply to these only);
// `objects` are caller buffers it touched (serde hooks know no keys); `scope_tag` is the
// AttributionScope active on the recording thread (0 = none). `effective` is false when the
// fault changed nothing (e.g. bits of an empty buffer).
//
// Damage to one loaded object (truncate, corrupt) also says which key's bytes it damaged
// (`damaged_key`) and the offset of the first byte it changed or removed
// (`first_damaged_byte`; nullopt when it changed nothing). A deserializer reads only its
// frame's bytes, and a stored object can be longer than its frame (serialize_wrong_count's
// "one byte long"): damage that starts at or past the frame's end changes nothing the
// deserializer reads, so it obliges the stack to nothing (the campaign counts it as
// damage_past_frame). Other events leave both nullopt.
struct FaultEvent {
  std::uint64_t seq = 0;
  FaultKind kind = FaultKind::kLoadDrop;
  FaultEffect effect = FaultEffect::kNone;
  // Every member has an initializer, so that a designated initializer may name only some.
  std::vector<ObjectKey> keys{};
  std::vector<const MemoryObj*> objects{};
  std::uint64_t scope_tag = 0;
  bool effective = true;
  std::string detail{};
  std::optional<ObjectKey> damaged_key{};
  std::optional<std::size_t> first_damaged_byte{};

  // "store_fail(fails_task) keys=[...] detail", then " (key <hash> damaged from byte N)".
  std::string to_string() const;
};

// FaultLog
//
// Thread-safe record of injected faults. Events are kept until drained, at most
// kMaxPendingEvents of them (an adapter built from JSON and never drained must not grow without
// bound: the oldest are dropped and counted); per-kind counts are kept forever.
class FaultLog {
 public:
  static constexpr std::size_t kMaxPendingEvents = std::size_t{1} << 16;

  // record()
  //
  // Assigns the next sequence number and the calling thread's AttributionScope tag (unless the
  // event already carries one), then appends `event`.
  void record(FaultEvent event);

  // drain()
  //
  // Removes and returns every event recorded since the last drain, in sequence order.
  std::vector<FaultEvent> drain();

  // count() / counts()
  //
  // How many events of a kind were recorded since construction.
  std::uint64_t count(FaultKind kind) const;
  std::array<std::uint64_t, kFaultKindCount> counts() const;

  // next_seq()
  //
  // The sequence number the next event will get: every event recorded from now on has a seq
  // >= this value. (Consumers use it to ignore events older than a buffer they own: an event
  // holds raw pointers, and a buffer freed since may have been reallocated.)
  std::uint64_t next_seq() const;

  // dropped()
  //
  // Events discarded because nobody drained them in time.
  std::uint64_t dropped() const;

  // counts_json()
  //
  // {"load_drop": n, ...} with every kind, zeros included.
  Json counts_json() const;

 private:
  mutable std::mutex mu_;
  std::uint64_t next_seq_ = 1;                           // guarded by mu_
  std::deque<FaultEvent> pending_;                       // guarded by mu_
  std::uint64_t dropped_ = 0;                            // guarded by mu_
  std::array<std::uint64_t, kFaultKindCount> counts_{};  // guarded by mu_
};

// AttributionScope
//
// While alive, events recorded on this thread carry `tag` (non-zero). Scopes nest; the inner
// one wins until it ends.
class AttributionScope {
 public:
  explicit AttributionScope(std::uint64_t tag);
  ~AttributionScope();
  AttributionScope(const AttributionScope&) = delete;
  AttributionScope& operator=(const AttributionScope&) = delete;

  // current()
  //
  // The tag of the innermost scope on this thread; 0 when none.
  static std::uint64_t current();

 private:
  std::uint64_t previous_;
};

// InjectedFault
//
// Thrown by every injected throw ("injected fault: <what>").
class InjectedFault : public std::runtime_error {
 public:
  explicit InjectedFault(const std::string& what) : std::runtime_error("injected fault: " + what) {}
};

}  // namespace lmcache::fault
