#include "lmcache/conformance/properties.h"

namespace lmcache::conformance {

namespace {

constexpr std::string_view kSerde = "SerdeConformance";
constexpr std::string_view kProcessor = "ProcessorConformance";
constexpr std::string_view kAdapter = "AdapterConformance";
constexpr std::string_view kWrapper = "WrapperConformance";

constexpr PropertyInfo kSerdeProperties[] = {
    {kSerde, "DeterministicOutput",
     "serialize() gives the same count and bytes twice on one instance and on a fresh instance"},
    {kSerde, "DeterministicAcrossThreads",
     "one instance serializing from 4 threads at once gives the single-threaded bytes"},
    {kSerde, "EstimateIsUpperBound",
     "serialize() never writes more than estimate_serialized_size(layout)"},
    {kSerde, "EstimateDependsOnLayoutOnly",
     "the estimate is the same before/after serializing other data and across instances"},
    {kSerde, "RoundTrip",
     "deserialize(serialize(x)) == x bit for bit (lossless) or within the declared hard bound; "
     "above the soft bound is a QualityWarning; NaN / inf handled as declared"},
    {kSerde, "BytesPastCountUntouched",
     "bytes of dst past the returned count, and the source, are left untouched"},
    {kSerde, "ShortBufferRejected",
     "a destination shorter than the output gives std::invalid_argument, no overrun, no write"},
    {kSerde, "DeserializeWritesOnlyDestination",
     "deserialize() writes only its destination and leaves its source unchanged"},
    {kSerde, "ShortSourceRejected",
     "a truncated source gives std::invalid_argument and leaves the destination untouched"},
    {kSerde, "UnsupportedInputRejected",
     "a dtype outside input_dtypes gives std::invalid_argument and writes nothing"},
    {kSerde, "MultiNoneSlotRules",
     "multi serde: wrong group length and None required src slots rejected; None dst slots "
     "skipped untouched (the length-1 bridge reads nothing)"},
    {kSerde, "BridgeEquivalence",
     "the length-1 bridge gives the same estimate, bytes and decoded values as direct calls"},
};

constexpr PropertyInfo kProcessorProperties[] = {
    {kProcessor, "DistinctEventFds",
     "the serialize and deserialize fds are valid and distinct, also across instances"},
    {kProcessor, "OneNotifyPerTask",
     "each completed task adds exactly one notify to its direction's fd, after its result"},
    {kProcessor, "OneShotQueries",
     "a result is returned exactly once; the other direction never returns it"},
    {kProcessor, "UnknownIdsGiveNone", "queries of ids never issued return none and never throw"},
    {kProcessor, "FailureReportedAsFalse",
     "a task whose serde throws completes as false and is still signalled once"},
    {kProcessor, "ConcurrentSubmitters",
     "4 threads submitting at once get unique ids, correct results and one notify per task"},
    {kProcessor, "CloseReleasesResources",
     "close() (idempotent) returns the process to its fd and thread counts before creation"},
    {kProcessor, "CloseCompletesQueuedWork",
     "tasks queued before close() still complete and stay queryable after it"},
    {kProcessor, "UseAfterClose", "submits after close() throw std::logic_error"},
    {kProcessor, "MismatchedBatchRejected",
     "src and dst lists of different lengths give std::invalid_argument and no task"},
    {kProcessor, "SerializeThenDeserialize",
     "serialize into an estimate-sized temp succeeds, narrows it, and deserializes back"},
};

constexpr PropertyInfo kAdapterProperties[] = {
    {kAdapter, "DistinctEventFds",
     "store, lookup and load fds are valid and pairwise distinct, also across instances"},
    {kAdapter, "UnknownIdsGiveNone",
     "queries of ids never issued return none, pops return nothing, nothing throws"},
    {kAdapter, "OneShotResults",
     "[stateful] every store result is popped once, every query answers once, never cross-kind"},
    {kAdapter, "EachKindSignalsItsFd",
     "[stateful] each completed task notifies its kind's fd exactly once and no other fd"},
    {kAdapter, "StoreReportsBytes",
     "[stateful] stores succeed; bytes_transferred lies between the new and all bytes stored"},
    {kAdapter, "LookupReportsPresence",
     "[stateful] lookup-and-lock bit i is set exactly when key i is stored"},
    {kAdapter, "PartialLoadBitmap",
     "[stateful] load bit i is set exactly for stored keys; their bytes come back, the other "
     "destinations stay untouched"},
    {kAdapter, "LookupLocks",
     "[stateful] lookup hits take a lock and unlock releases it (reports_lock_count)"},
    {kAdapter, "UsageMatchesStoredBytes",
     "[stateful] get_usage() equals the bytes of the stored keys, in total and per cache_salt"},
    {kAdapter, "ListenersCalled",
     "[stateful] listeners see every store (with sizes), load hit and delete"},
    {kAdapter, "StatefulModel",
     "[stateful] store / lookup-and-lock / unlock / load / delete sequences match a model map "
     "under every check above"},
    {kAdapter, "CloseIsIdempotent",
     "close() twice is fine; submits afterwards throw std::logic_error; pops still work"},
    {kAdapter, "CloseReleasesResources",
     "close() returns the process to its fd and thread counts before creation"},
};

constexpr PropertyInfo kWrapperProperties[] = {
    {kWrapper, "EmptyBatchCompletes",
     "an empty store completes at once as success(0); an empty load as an empty bitmap"},
    {kWrapper, "StoreLoadRoundTrip",
     "stores report the inner's serialized bytes; loads give the serde round trip back"},
    {kWrapper, "LookupFdIsInners",
     "the lookup fd is the inner adapter's and lookups pass straight through"},
    {kWrapper, "HomogeneityEnforced",
     "a batch whose layouts differ from objects[0] throws std::invalid_argument naming the "
     "index, with no task, no temp and nothing stored"},
    {kWrapper, "AllOrNothingStore",
     "any failure (temp allocation, serde submit/serialize, inner submit/store) completes the "
     "store once as failure(0) with every temp released"},
    {kWrapper, "AllOrNothingLoad",
     "any failure (temp allocation, inner submit, serde submit/deserialize) completes the load "
     "once with an all-zero bitmap and every temp released"},
    {kWrapper, "PartialLoadKeepsBitmap",
     "a partial inner load keeps its bitmap; only its set bits are deserialized"},
    {kWrapper, "TempsReleased",
     "L1 usage returns to its baseline after every completed store and load"},
    {kWrapper, "CloseFailsInFlightTasks",
     "close() completes every in-flight task as failed exactly once and releases its temps"},
};

}  // namespace

std::string_view SuiteName(ImplementationKind kind) {
  switch (kind) {
    case ImplementationKind::kSerde:
      return kSerde;
    case ImplementationKind::kProcessor:
      return kProcessor;
    case ImplementationKind::kAdapter:
      return kAdapter;
    case ImplementationKind::kWrapper:
      return kWrapper;
  }
  return kSerde;
}

std::span<const PropertyInfo> PropertiesOf(ImplementationKind kind) {
  switch (kind) {
    case ImplementationKind::kSerde:
      return kSerdeProperties;
    case ImplementationKind::kProcessor:
      return kProcessorProperties;
    case ImplementationKind::kAdapter:
      return kAdapterProperties;
    case ImplementationKind::kWrapper:
      return kWrapperProperties;
  }
  return {};
}

}  // namespace lmcache::conformance
