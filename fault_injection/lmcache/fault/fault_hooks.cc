#include "lmcache/fault/fault_hooks.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/fault/internal/knobs.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_config.h"
#include "lmcache/serde/serde_registry.h"

namespace lmcache::fault {
namespace {

using namespace fault_internal;

std::uint64_t digest_one(const MemoryObj& obj) {
  auto bytes = obj.bytes();
  return Fnv1a64().add_u64(bytes.size()).add(bytes).value();
}

std::shared_ptr<FaultLog> or_private(std::shared_ptr<FaultLog> log) {
  return log ? std::move(log) : std::make_shared<FaultLog>();
}

void record(FaultLog& log, FaultKind kind, FaultEffect effect,
            std::vector<const MemoryObj*> objects, std::string detail, bool effective = true) {
  log.record({.kind = kind,
              .effect = effect,
              .objects = std::move(objects),
              .effective = effective,
              .detail = std::move(detail)});
}

std::vector<const MemoryObj*> raw(const std::vector<MemoryObjPtr>& objs) {
  std::vector<const MemoryObj*> out;
  for (const auto& o : objs) out.push_back(o.get());
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// L1.

L1FaultOptions L1FaultOptions::from_json(const Json& config) {
  ConfigReader reader(config, "l1 fault config");
  L1FaultOptions o;
  o.alloc_fail_rate = read_probability(reader, "alloc_fail_rate", 0.0);
  o.alloc_fail_nth = read_index_list(reader, "alloc_fail_nth",
                                     "'alloc_fail_nth' must be a list of non-negative integers");
  reader.finish();
  return o;
}

Json L1FaultOptions::to_json() const {
  return {{"alloc_fail_rate", alloc_fail_rate}, {"alloc_fail_nth", alloc_fail_nth}};
}

struct L1AllocFaultHook::State {
  State(L1FaultOptions o, std::int64_t seed, std::shared_ptr<FaultLog> l)
      : options(std::move(o)), rng(static_cast<std::uint64_t>(seed)), log(std::move(l)) {}
  L1FaultOptions options;
  FaultRng rng;
  std::shared_ptr<FaultLog> log;
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> failures{0};
};

L1AllocFaultHook::L1AllocFaultHook(L1FaultOptions options, std::int64_t seed,
                                   std::shared_ptr<FaultLog> log)
    : state_(std::make_shared<State>(std::move(options), seed, or_private(std::move(log)))) {}

ByteCapacityAllocator::BufferFactory L1AllocFaultHook::factory() const {
  return [state = state_](const MemoryLayoutDesc& layout) -> MemoryObjPtr {
    const std::uint64_t n = state->calls.fetch_add(1, std::memory_order_relaxed);
    const auto& nth = state->options.alloc_fail_nth;
    if (std::find(nth.begin(), nth.end(), n) != nth.end() ||
        state->rng.chance(state->options.alloc_fail_rate, "l1_alloc_fail", n)) {
      state->failures.fetch_add(1, std::memory_order_relaxed);
      record(*state->log, FaultKind::kL1AllocFail, FaultEffect::kFailsTask, {},
             "factory call " + std::to_string(n) + " for " + layout.to_string());
      throw std::bad_alloc();
    }
    return MemoryObj::allocate(layout);
  };
}

std::uint64_t L1AllocFaultHook::calls() const { return state_->calls.load(); }
std::uint64_t L1AllocFaultHook::failures() const { return state_->failures.load(); }

// ---------------------------------------------------------------------------------------------
// Serde options.

SerdeFaultOptions SerdeFaultOptions::from_json(const Json& config) {
  ConfigReader reader(config, "serde fault config");
  SerdeFaultOptions o;
  o.serialize_throw_rate = read_probability(reader, "serialize_throw_rate", 0.0);
  o.serialize_wrong_count_rate = read_probability(reader, "serialize_wrong_count_rate", 0.0);
  o.estimate_under_report_rate = read_probability(reader, "estimate_under_report_rate", 0.0);
  o.deserialize_throw_rate = read_probability(reader, "deserialize_throw_rate", 0.0);
  o.submit_throw_rate = read_probability(reader, "submit_throw_rate", 0.0);
  reader.finish();
  return o;
}

Json SerdeFaultOptions::to_json() const {
  return {{"serialize_throw_rate", serialize_throw_rate},
          {"serialize_wrong_count_rate", serialize_wrong_count_rate},
          {"estimate_under_report_rate", estimate_under_report_rate},
          {"deserialize_throw_rate", deserialize_throw_rate},
          {"submit_throw_rate", submit_throw_rate}};
}

// ---------------------------------------------------------------------------------------------
// Serializer / deserializer.

FaultySerializer::FaultySerializer(SerializerPtr inner, SerdeFaultOptions options,
                                   std::int64_t seed, std::shared_ptr<FaultLog> log)
    : inner_(std::move(inner)),
      options_(options),
      rng_(static_cast<std::uint64_t>(seed)),
      log_(or_private(std::move(log))) {
  if (!inner_) throw std::invalid_argument("FaultySerializer: inner serializer is null");
}

std::size_t FaultySerializer::serialize(const MemoryObj& src, MemoryObj& dst,
                                        const ObjectKey& key) {
  const std::uint64_t index = occurrences_.next(1, digest_one(src));
  if (rng_.chance(options_.serialize_throw_rate, "serialize_throw", index)) {
    record(*log_, FaultKind::kSerializeThrow, FaultEffect::kFailsTask, {&src}, "");
    throw InjectedFault("serialize of " + std::to_string(src.size()) + " bytes");
  }
  const std::size_t n = inner_->serialize(src, dst, key);
  if (!rng_.chance(options_.serialize_wrong_count_rate, "serialize_wrong_count", index)) return n;
  // Three lies with different consequences (see the header).
  std::size_t wrong;
  FaultEffect effect;
  std::string what;
  switch (rng_.below(3, "serialize_wrong_count_kind", index)) {
    case 0:
      if (n > 0) {
        wrong = n - 1 - static_cast<std::size_t>(rng_.below(n, "wrong_count_less", index)) / 2;
        effect = FaultEffect::kPoisonsStored;
        what = "short";
        break;
      }
      [[fallthrough]];
    case 1:
      wrong = n + 1;
      if (wrong <= dst.physical_size()) {
        // The extra byte is reported as written: give it a seeded non-zero value, so that what is
        // stored (and what damage to that byte changes) does not depend on what the buffer held.
        dst.data()[n] = static_cast<std::byte>(1 + rng_.below(255, "wrong_count_extra", index));
        effect = FaultEffect::kNone;
        what = "one byte long (fits the buffer)";
      } else {
        effect = FaultEffect::kFailsTask;
        what = "past the buffer";
      }
      break;
    default:
      wrong = dst.physical_size() + 1;
      effect = FaultEffect::kFailsTask;
      what = "past the buffer";
      break;
  }
  record(*log_, FaultKind::kSerializeWrongCount, effect, {&src},
         what + ": reported " + std::to_string(wrong) + " of " + std::to_string(n) + " bytes");
  return wrong;
}

std::size_t FaultySerializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  const std::size_t real = inner_->estimate_serialized_size(layout);
  const std::uint64_t n = estimate_calls_.fetch_add(1, std::memory_order_relaxed);
  if (!rng_.chance(options_.estimate_under_report_rate, "estimate_under_report", n)) return real;
  const std::size_t lie = real / 3;
  record(*log_, FaultKind::kEstimateUnderReport, FaultEffect::kMayFail, {},
         "estimate " + std::to_string(lie) + " instead of " + std::to_string(real) + " for " +
             layout.to_string());
  return lie;
}

FaultyDeserializer::FaultyDeserializer(DeserializerPtr inner, SerdeFaultOptions options,
                                       std::int64_t seed, std::shared_ptr<FaultLog> log)
    : inner_(std::move(inner)),
      options_(options),
      rng_(static_cast<std::uint64_t>(seed)),
      log_(or_private(std::move(log))) {
  if (!inner_) throw std::invalid_argument("FaultyDeserializer: inner deserializer is null");
}

void FaultyDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  const std::uint64_t index = occurrences_.next(2, digest_one(src));
  if (rng_.chance(options_.deserialize_throw_rate, "deserialize_throw", index)) {
    record(*log_, FaultKind::kDeserializeThrow, FaultEffect::kFailsTask, {&dst, &src}, "");
    throw InjectedFault("deserialize of " + std::to_string(src.size()) + " bytes");
  }
  inner_->deserialize(src, dst, key);
}

// ---------------------------------------------------------------------------------------------
// Processor.

FaultySerdeProcessor::FaultySerdeProcessor(SerdeProcessorPtr inner, SerdeFaultOptions options,
                                           std::int64_t seed, std::shared_ptr<FaultLog> log)
    : ForwardingSerdeProcessor(std::move(inner)),
      options_(options),
      rng_(static_cast<std::uint64_t>(seed)),
      log_(or_private(std::move(log))) {}

TaskId FaultySerdeProcessor::submit_serialize(std::vector<MemoryObjPtr> srcs,
                                              std::vector<MemoryObjPtr> dsts,
                                              std::vector<ObjectKey> keys) {
  const std::uint64_t index = occurrences_.next(3, digest_objects(srcs));
  if (rng_.chance(options_.submit_throw_rate, "serde_submit_serialize", index)) {
    record(*log_, FaultKind::kSerdeSubmitThrow, FaultEffect::kFailsTask, raw(srcs),
           "submit_serialize");
    throw InjectedFault("submit_serialize of " + std::to_string(srcs.size()) + " objects");
  }
  return ForwardingSerdeProcessor::submit_serialize(std::move(srcs), std::move(dsts),
                                                    std::move(keys));
}

TaskId FaultySerdeProcessor::submit_deserialize(std::vector<MemoryObjPtr> srcs,
                                                std::vector<MemoryObjPtr> dsts,
                                                std::vector<ObjectKey> keys) {
  const std::uint64_t index = occurrences_.next(4, digest_objects(srcs));
  if (rng_.chance(options_.submit_throw_rate, "serde_submit_deserialize", index)) {
    record(*log_, FaultKind::kSerdeSubmitThrow, FaultEffect::kFailsTask, raw(dsts),
           "submit_deserialize");
    throw InjectedFault("submit_deserialize of " + std::to_string(srcs.size()) + " objects");
  }
  return ForwardingSerdeProcessor::submit_deserialize(std::move(srcs), std::move(dsts),
                                                      std::move(keys));
}

// ---------------------------------------------------------------------------------------------
// Assembly.

FaultySerde make_faulty_serde_processor(const Json& serde_config, const SerdeFaultOptions& options,
                                        std::int64_t seed, std::shared_ptr<FaultLog> log,
                                        const SerdeDecorators& decorators) {
  log = or_private(std::move(log));
  SerdeConfig config = SerdeConfig::from_json(serde_config);
  FaultySerde out;
  SerdeProcessorPtr processor;
  if (config.type == kFp8SerdeType) {
    Fp8SerdeConfig fp8 = Fp8SerdeConfig::from_json(config.kwargs);
    SerializerPtr ser = std::make_shared<Fp8Serializer>(fp8.options);
    DeserializerPtr deser = std::make_shared<Fp8Deserializer>(fp8.options);
    if (decorators.serializer) ser = decorators.serializer(std::move(ser));
    if (decorators.deserializer) deser = decorators.deserializer(std::move(deser));
    ser = std::make_shared<FaultySerializer>(std::move(ser), options, seed, log);
    deser = std::make_shared<FaultyDeserializer>(std::move(deser), options, seed, log);
    processor =
        std::make_unique<AsyncSerdeProcessor>(std::move(ser), std::move(deser), fp8.max_workers);
    out.sync_hooks = true;
  } else {
    processor = create_serde_processor(config);
  }
  processor = std::make_unique<FaultySerdeProcessor>(std::move(processor), options, seed, log);
  if (decorators.processor) processor = decorators.processor(std::move(processor));
  out.processor = std::move(processor);
  return out;
}

}  // namespace lmcache::fault
