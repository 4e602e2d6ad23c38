// File: lmcache/fault/fault_hooks.h
//
// Fault hooks for the layers around the L2 adapter, each a decorator driven by a slice of the
// FaultPlan and the one seed:
//
//   L1AllocFaultHook      a ByteCapacityAllocator::BufferFactory for L1Manager that throws
//                         std::bad_alloc for chosen calls (alloc_fail_nth) or at a rate, so
//                         reserve_write reports OUT_OF_MEMORY for its whole batch.
//   FaultySerializer      throws, returns a wrong byte count, or under-reports
//                         estimate_serialized_size.
//   FaultyDeserializer    throws.
//   FaultySerdeProcessor  (a ForwardingSerdeProcessor) whose submit_serialize /
//                         submit_deserialize throw.
//
// Decision indices (see fault_rng.h): the L1 hook and the estimate use their call count (both
// are called only from submit paths, on the submitting thread); serialize, deserialize and
// the processor's submits use the digest of the bytes they read plus its occurrence count,
// because serde workers and the wrapper's loop call them in a timing-dependent order.
//
// Every injected fault is recorded in the FaultLog before the hook returns or throws; the
// serde hooks record the caller objects they touched (they know no keys), the L1 hook and the
// estimate rely on the recording thread's AttributionScope.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/fault/fault_log.h"
#include "lmcache/fault/fault_rng.h"
#include "lmcache/l1/byte_capacity_allocator.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache::fault {

// L1FaultOptions
//
// JSON: {"alloc_fail_rate": 0.0, "alloc_fail_nth": []} (0-based factory call indices).
struct L1FaultOptions {
  double alloc_fail_rate = 0.0;
  std::vector<std::uint64_t> alloc_fail_nth;

  // Throws std::invalid_argument naming the key for a bad or unknown key.
  static L1FaultOptions from_json(const Json& config);
  Json to_json() const;
};

class L1AllocFaultHook {
 public:
  // L1AllocFaultHook()
  //
  // Events go to `log` (a private one when null).
  L1AllocFaultHook(L1FaultOptions options, std::int64_t seed,
                   std::shared_ptr<FaultLog> log = nullptr);

  // factory()
  //
  // A BufferFactory: call n (0-based) throws std::bad_alloc when n is in alloc_fail_nth or
  // the rate fires for n, recording an l1_alloc_fail event (effect fails_task); otherwise it
  // returns MemoryObj::allocate(layout). The factory shares this hook's state and may outlive
  // it.
  ByteCapacityAllocator::BufferFactory factory() const;

  // Calls made and failures injected so far.
  std::uint64_t calls() const;
  std::uint64_t failures() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// SerdeFaultOptions
//
// JSON: {"serialize_throw_rate", "serialize_wrong_count_rate", "estimate_under_report_rate",
// "deserialize_throw_rate", "submit_throw_rate"}, probabilities in [0, 1], default 0.
struct SerdeFaultOptions {
  double serialize_throw_rate = 0.0;        // per serialized object
  double serialize_wrong_count_rate = 0.0;  // per serialized object
  double estimate_under_report_rate = 0.0;  // per estimate call
  double deserialize_throw_rate = 0.0;      // per deserialized object
  double submit_throw_rate = 0.0;           // per processor submit, either direction

  static SerdeFaultOptions from_json(const Json& config);
  Json to_json() const;
  bool any_sync_fault() const {
    return serialize_throw_rate > 0 || serialize_wrong_count_rate > 0 ||
           estimate_under_report_rate > 0 || deserialize_throw_rate > 0;
  }
};

class FaultySerializer final : public Serializer {
 public:
  // Throws std::invalid_argument for a null inner.
  FaultySerializer(SerializerPtr inner, SerdeFaultOptions options, std::int64_t seed,
                   std::shared_ptr<FaultLog> log);

  // serialize()
  //
  // May throw InjectedFault (serialize_throw, fails_task) before writing anything. Otherwise
  // serializes, then may return a wrong count (serialize_wrong_count): fewer bytes than written
  // (poisons_stored: the store succeeds with a short payload), one more (harmless while it fits
  // the buffer, effect none: the extra byte, past the frame, gets a seeded non-zero value) or
  // more than the buffer holds (fails_task: the processor's set_used_size() throws).
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  // estimate_serialized_size()
  //
  // May return a third of the inner estimate (estimate_under_report, may_fail).
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

 private:
  SerializerPtr inner_;
  SerdeFaultOptions options_;
  FaultRng rng_;
  std::shared_ptr<FaultLog> log_;
  OccurrenceCounter occurrences_;
  mutable std::atomic<std::uint64_t> estimate_calls_{0};
};

class FaultyDeserializer final : public Deserializer {
 public:
  FaultyDeserializer(DeserializerPtr inner, SerdeFaultOptions options, std::int64_t seed,
                     std::shared_ptr<FaultLog> log);

  // deserialize()
  //
  // May throw InjectedFault (deserialize_throw, fails_task) without writing `dst`.
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

 private:
  DeserializerPtr inner_;
  SerdeFaultOptions options_;
  FaultRng rng_;
  std::shared_ptr<FaultLog> log_;
  OccurrenceCounter occurrences_;
};

class FaultySerdeProcessor final : public ForwardingSerdeProcessor {
 public:
  FaultySerdeProcessor(SerdeProcessorPtr inner, SerdeFaultOptions options, std::int64_t seed,
                       std::shared_ptr<FaultLog> log);

  // submit_serialize() / submit_deserialize()
  //
  // May throw InjectedFault (serde_submit_throw, fails_task) without submitting; the event
  // names the caller's objects (srcs for serialize, dsts for deserialize).
  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                          std::vector<ObjectKey> keys) override;
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override;

 private:
  SerdeFaultOptions options_;
  FaultRng rng_;
  std::shared_ptr<FaultLog> log_;
  OccurrenceCounter occurrences_;
};

// SerdeDecorators
//
// Optional extra layers make_faulty_serde_processor() puts around the pieces it builds (the
// campaign's mutants use them): each function receives a piece and returns its replacement.
struct SerdeDecorators {
  std::function<SerializerPtr(SerializerPtr)> serializer;
  std::function<DeserializerPtr(DeserializerPtr)> deserializer;
  std::function<SerdeProcessorPtr(SerdeProcessorPtr)> processor;
};

// FaultySerde
//
// What make_faulty_serde_processor() built. `sync_hooks` is false when the serde type offers
// no Serializer/Deserializer pair to decorate (then only submit_throw applies).
struct FaultySerde {
  SerdeProcessorPtr processor;
  bool sync_hooks = false;
};

// make_faulty_serde_processor()
//
// Builds a processor for `serde_config` ({"type": ..., kwargs}) with the faults of `options`:
// for "fp8", an AsyncSerdeProcessor (max_workers from the config) over FaultySerializer /
// FaultyDeserializer around the Fp8 pair; for any other registered type, the registry's
// processor. Either way wrapped in a FaultySerdeProcessor. Throws std::invalid_argument for a
// bad config.
FaultySerde make_faulty_serde_processor(const Json& serde_config, const SerdeFaultOptions& options,
                                        std::int64_t seed, std::shared_ptr<FaultLog> log,
                                        const SerdeDecorators& decorators = {});

}  // namespace lmcache::fault
