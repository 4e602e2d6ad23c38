// File: lmcache/conformance/internal/property_list.h
//
// THE property catalogue: every conformance property is one line here, and everything else is
// derived from these lines (X-macros): the properties_of() table (properties.cc), each suite's
// TEST_P (the gtest names, hence the runner's matrix and the reports), each suite's dispatch
// table (Run<Kind>Property) and the declaration of the function that implements the property
// (internal/<kind>_properties.h, defined in the suite's <kind>_conformance*.cc files). Adding a
// property is one line here plus its function; the self-test then requires a mutant that it
// catches, a line in mustpass.txt and a row in conformance/README.md.
//
// X(Name, "what a Pass guarantees"). The order is the catalogue's order.
#pragma once

// Declares the function of one property, of the type `PropertyFunction` names in the namespace
// that expands it (each suite's internal/<kind>_properties.h):
//   using PropertyFunction = Verdict(const SerdeUnderTest& serde);
//   LMCACHE_CONFORMANCE_SERDE_PROPERTIES(LMCACHE_CONFORMANCE_DECLARE_PROPERTY)
#define LMCACHE_CONFORMANCE_DECLARE_PROPERTY(Name, Checks) PropertyFunction Name;

#define LMCACHE_CONFORMANCE_SERDE_PROPERTIES(X)                                                   \
  X(DeterministicOutput,                                                                          \
    "serialize() gives the same count and bytes twice on one instance and on a fresh instance, "  \
    "whatever junk the source buffer holds past its layout")                                      \
  X(DeterministicAcrossThreads,                                                                   \
    "threads sharing one serializer serialize distinct inputs of distinct layouts at once; each " \
    "gets the bytes a single-threaded call gives")                                                \
  X(EstimateIsUpperBound, "serialize() never writes more than estimate_serialized_size(layout)")  \
  X(EstimateDependsOnLayoutOnly,                                                                  \
    "the estimate is the same before/after serializing other data and across instances")          \
  X(RoundTrip,                                                                                    \
    "deserialize(serialize(x)) == x bit for bit (lossless) or within the declared hard bound, "   \
    "from a serialized buffer narrowed to its count with junk past it; above the soft bound is "  \
    "a QualityWarning; NaN / inf handled as declared")                                            \
  X(BytesPastCountUntouched,                                                                      \
    "bytes of dst past the returned count, and the source, are left untouched")                   \
  X(ShortBufferRejected,                                                                          \
    "a destination shorter than the output gives std::invalid_argument, no overrun, no write")    \
  X(DeserializeWritesOnlyDestination,                                                             \
    "deserialize() writes only its destination and leaves its source unchanged")                  \
  X(ShortSourceRejected,                                                                          \
    "a truncated source gives std::invalid_argument and leaves the destination untouched, also "  \
    "when it is narrowed (size() short) inside a buffer that still holds every byte")             \
  X(UnsupportedInputRejected,                                                                     \
    "a dtype outside input_dtypes gives std::invalid_argument and writes nothing")                \
  X(MultiNoneSlotRules,                                                                           \
    "multi serde: wrong group length and None required src slots rejected; None dst slots "       \
    "skipped untouched (the length-1 bridge reads nothing)")                                      \
  X(BridgeEquivalence,                                                                            \
    "the length-1 bridge gives the same estimate, bytes and decoded values as direct calls")      \
  X(ConcurrentRoundTrips,                                                                         \
    "threads sharing one serializer and one deserializer round-trip distinct inputs of distinct " \
    "layouts at once; each gets what a single-threaded round trip gives")                         \
  X(OneInstanceManyLayouts,                                                                       \
    "[stateful] one serializer and one deserializer, driven through a sequence of estimates, "    \
    "serializes and deserializes of several layouts and keys (one field apart), answer every "    \
    "call as fresh instances do")                                                                 \
  X(IntegrityBitFlipsDetected,                                                                    \
    "integrity: every single-bit flip of a stored frame makes deserialize() fail")                \
  X(IntegrityTruncationsDetected,                                                                 \
    "integrity: every truncation of a stored frame makes deserialize() fail")                     \
  X(IntegrityRangesDetected,                                                                      \
    "integrity: every zeroed or rewritten range of a stored frame (each header byte and window, " \
    "the tail, the whole frame, payload ranges) makes deserialize() fail")                        \
  X(IntegrityVersionChecked, "integrity: a frame with another version byte fails")                \
  X(IntegrityOtherChunkRejected,                                                                  \
    "integrity: a frame deserialized under another key's chunk hash fails")                       \
  X(IntegrityOtherKeyFieldRejected,                                                               \
    "integrity: a frame deserialized under a key that differs in any one field fails")            \
  X(IntegrityOtherSaltRejected,                                                                   \
    "confidentiality: a frame deserialized under another cache_salt (tenant) fails")              \
  X(IntegrityOtherSecretRejected,                                                                 \
    "confidentiality: a frame deserialized with another secret (wrong master key) fails")         \
  X(IntegrityNoncesDistinct,                                                                      \
    "confidentiality: the nonces (IVs) of many serializations of one input are all distinct")     \
  X(IntegrityCiphertextNotPlaintext, "confidentiality: no frame holds its payload in clear")      \
  X(MatchesReference,                                                                             \
    "a serde of a type the project knows gives the reference's frames (byte for byte unless "     \
    "randomized), reads them and is read by it to the same values, and gives its verdict on "     \
    "every corrupted, extended or moved frame")                                                   \
  X(MatchesGoldenVectors,                                                                         \
    "a serde of a type the project knows reads the kit's golden frames of its configuration to "  \
    "the format's values and writes them (byte for byte unless frames vary) for their inputs")

#define LMCACHE_CONFORMANCE_PROCESSOR_PROPERTIES(X)                                              \
  X(DistinctEventFds,                                                                            \
    "the serialize and deserialize fds are valid and distinct, also across instances")           \
  X(OneNotifyPerTask,                                                                            \
    "each completed task, an empty batch included, adds exactly one notify to its direction's "  \
    "fd, after its result; no two tasks of either direction get the same id")                    \
  X(OneShotQueries,                                                                              \
    "a result, true or false, is returned exactly once; the other direction never returns it, "  \
    "also while its own task of a like number is completed and untaken")                         \
  X(UnknownIdsGiveNone, "queries of ids never issued return none and never throw")               \
  X(FailureReportedAsFalse,                                                                      \
    "a task with a failing pair at any position (first, middle, last) completes false and is "   \
    "still signalled once; the tasks around it are unaffected")                                  \
  X(ConcurrentSubmitters,                                                                        \
    "threads submitting distinct inputs at once get unique ids, their own decoded values and "   \
    "one notify per task")                                                                       \
  X(CloseReleasesResources,                                                                      \
    "close() (idempotent) returns the process to its fd and thread counts before creation")      \
  X(CloseCompletesQueuedWork,                                                                    \
    "tasks queued before close() still complete; results completed before close() and not yet "  \
    "taken stay queryable, once, after it")                                                      \
  X(UseAfterClose, "submits after close() throw std::logic_error")                               \
  X(MismatchedBatchRejected,                                                                     \
    "srcs, dsts and keys of different lengths (each list in turn one shorter or longer, empty "  \
    "included, both directions) give std::invalid_argument and no task")                         \
  X(SerializeThenDeserialize,                                                                    \
    "batches, some of mixed layouts, serialize into estimate-sized temps, narrowed to a size "   \
    "that does not depend on the temp's capacity, with no byte past it changed, and "            \
    "deserialize back to the input values, pair by pair")                                        \
  X(KeysFollowTheirPairs,                                                                        \
    "pairs serialized in one batch under keys of their own deserialize alone, in reverse and "   \
    "in shuffled batches, each under its own key, to their own values")                          \
  X(MatchesReference,                                                                            \
    "over a serde of a type the project knows, every pair's frame is the reference's under its " \
    "own key (read back by the reference), and the processor reads the reference's frames")      \
  X(InlineMatchesSubmitted,                                                                      \
    "serialize_inline() and deserialize_inline() give each pair what a submitted task of the "    \
    "same pairs gives (outcome, narrowed size, bytes unless randomized), each pair under its own " \
    "key, and signal no fd (NotSupported when the processor runs nothing inline)")                \
  X(StatefulModel,                                                                               \
    "[stateful] one processor driven through serializes and deserializes of several layouts, "   \
    "failing pairs, estimates and queries in any order, then close(), matches a model of its "   \
    "tasks: every result once, right values, one notify each")                                   \
  X(ResourcesBoundedOverManyTasks,                                                               \
    "hundreds of tasks leave the fd and thread counts where a warmed-up processor had them, "    \
    "and no reference to a caller buffer once its result was taken")                             \
  X(TaskIdsNeverReused,                                                                          \
    "past 65,536 tasks, with an early result untaken, every task gets an id of its own and the " \
    "early result is still answered")

#define LMCACHE_CONFORMANCE_ADAPTER_PROPERTIES(X)                                                  \
  X(DistinctEventFds,                                                                              \
    "store, lookup and load fds are valid and pairwise distinct, also across instances")           \
  X(UnknownIdsGiveNone,                                                                            \
    "queries of ids never issued return none, pops return nothing, nothing throws")                \
  X(OneShotResults,                                                                                \
    "[stateful] every store result is popped once, every query answers once, never cross-kind; "   \
    "a store and a load never share an id")                                                        \
  X(EachKindSignalsItsFd,                                                                          \
    "[stateful] each completed task notifies its kind's fd exactly once and no other fd, after "   \
    "its result")                                                                                  \
  X(StoreReportsBytes,                                                                             \
    "[stateful] stores succeed; bytes_transferred lies between the new and all bytes stored "      \
    "(a key twice in a batch, or in two stores in flight, counts once)")                           \
  X(LookupReportsPresence,                                                                         \
    "[stateful] lookup-and-lock bit i is set exactly when key i is stored; keys that differ in "   \
    "any one field are different keys")                                                            \
  X(PartialLoadBitmap,                                                                             \
    "[stateful] load bit i is set exactly for stored keys; their bytes (size() bytes of a "        \
    "narrowed object) come back, the other destinations stay untouched")                           \
  X(LookupLocks,                                                                                   \
    "[stateful] every lookup hit takes a lock (a key twice in a batch or in two lookups takes "    \
    "two) and each unlocked occurrence releases one (reports_lock_count)")                         \
  X(UsageMatchesStoredBytes,                                                                       \
    "[stateful] get_usage() equals the bytes of the stored keys, in total and per cache_salt")     \
  X(ListenersCalled, "[stateful] listeners see every store (with sizes), load hit and delete")     \
  X(StatefulModel,                                                                                 \
    "[stateful] store / lookup-and-lock / unlock / load / delete sequences over several "          \
    "layouts, with tasks on the same key in flight together, match a model map under every "       \
    "check above")                                                                                 \
  X(CloseIsIdempotent,                                                                             \
    "close() twice is fine; submits afterwards throw std::logic_error; a store and a load that "   \
    "completed before close() are handed out after it, once")                                      \
  X(CloseReleasesResources,                                                                        \
    "close() returns the process to its fd and thread counts before creation")                     \
  X(ConcurrentSubmitters,                                                                          \
    "threads storing, looking up, loading, unlocking and deleting disjoint keys at once, with "    \
    "two threads popping, get unique ids, every result once, right bitmaps and bytes, one "        \
    "notify per task; usage and locks end at zero")                                                \
  X(ConcurrentFirstUse,                                                                            \
    "several fresh adapters used for the first time by one thread each, at once (what an "         \
    "implementation sets up lazily on first use is raced), each store, lookup and load its own "   \
    "keys right")                                                                                  \
  X(ResourcesBoundedOverManyTasks,                                                                 \
    "hundreds of tasks leave the fd and thread counts where a warmed-up adapter had them, and "    \
    "no reference to a caller buffer once its task completed")                                     \
  X(TaskIdsNeverReused,                                                                            \
    "past 65,536 loads, with an early load untaken, every task gets an id of its own and the "     \
    "early load still answers its hit")                                                            \
  X(MatchesReference,                                                                              \
    "an adapter of a storage type the project knows and the reference over the same store find "   \
    "and load each other's objects (0 B to chunk-sized, keys over every field) byte for byte, "    \
    "and miss what the other deleted")                                                             \
  X(OtherLengthLoadsContained,                                                                     \
    "a load into a buffer shorter than the stored object misses, a longer one misses or loads "    \
    "exactly the stored bytes (size() included), through the adapter that stored the key and "     \
    "one that did not; nothing is written past a buffer and every other key still loads its "      \
    "own bytes")                                                                                   \
  X(CloseWithTasksInFlight,                                                                        \
    "close() with stores, a load and a lookup of objects up to chunk size in flight returns, the " \
    "process survives (no SIGPIPE), each result is handed out at most once, no store or load "     \
    "query throws (a lookup's may throw std::logic_error), and nothing writes into a load's "      \
    "destination once close() has returned")                                                       \
  X(HostilePeerFailsCleanly,                                                                       \
    "over a RESP peer that answers no data command validly (error and null replies, oversized, "   \
    "negative or garbled lengths, an endless line, a reply cut short or reset, a hang-up at "      \
    "accept, a port that refuses, values of another length than the one stored), every store "     \
    "fails, every lookup and load misses, each within 30 s, and close() returns "                  \
    "(make_over_resp_peer; NotSupported without it)")                                              \
  X(ConfigTyposRejected,                                                                           \
    "a config with a misspelt key beside any of its keys (at the top, in its \"serde\" and "       \
    "\"serde_wrapper\" and in each of the serde's \"stages\"), or with a key no config has, is "   \
    "refused with an error naming that key (config; NotSupported without it)")                     \
  X(ConfigValueKindsChecked,                                                                       \
    "a config with a value of a kind its key cannot hold (a word where a number or a flag "        \
    "belongs, a number for \"type\", \"serde\" or \"serde_wrapper\"), at every depth "             \
    "ConfigTyposRejected varies, is refused with an error naming that key (config; NotSupported "  \
    "without it)")                                                                                 \
  X(StoredDamageContained,                                                                         \
    "objects damaged in the store underneath the adapter (cut short, a byte longer, replaced by "  \
    "a value of another kind; changed in place where it keeps a checksum) load as misses, within " \
    "30 s, and the adapter goes on storing and loading other keys (make_damageable; "              \
    "NotSupported without it)")                                                                    \
  X(CapacityHonoured,                                                                              \
    "built with a byte capacity and filled past it, the adapter never holds more, refuses no "     \
    "store that fits (when it reports usage), leaves no key of a refused store behind, and after " \
    "a delete stores as much again (make_with_capacity; NotSupported without it)")                 \
  X(LentBufferWrittenOnce,                                                                         \
    "lent store buffers come as asked, pairwise disjoint and disjoint from every buffer still "    \
    "lent or stored; the adapter leaves what the caller writes alone, and every key loads back "   \
    "what was written into its buffer (lend_store_buffers; NotSupported when it lends nothing)")   \
  X(LentBufferReleasedOnFailure,                                                                   \
    "lent_bytes_outstanding() grows by each lent buffer and comes back when it is dropped "        \
    "unsubmitted, adopted by its store, stored under another key or dropped after close(); "       \
    "lending changes no usage")                                                                    \
  X(LentBufferInvisibleBeforeStore,                                                                \
    "a lent, written buffer makes nothing visible (lookups and loads miss, listeners hear "        \
    "nothing) until its store completes; a dropped one never does")                                \
  X(LoadViewsHoldStoredBytes,                                                                      \
    "a view load answers only its own query, once, with a view per hit holding exactly the "       \
    "stored bytes (size() included) and none per miss; a view never changes across a delete, a "   \
    "new store of its key, close() or the adapter's end (NotSupported without load views)")

#define LMCACHE_CONFORMANCE_WRAPPER_PROPERTIES(X)                                                 \
  X(EmptyBatchCompletes,                                                                          \
    "an empty store completes at once as success(0); an empty load as an empty bitmap")           \
  X(StoreLoadRoundTrip,                                                                           \
    "stores of batches up to 64+ keys report the inner's bytes; loads give the serde round trip " \
    "back")                                                                                       \
  X(LookupFdIsInners, "the lookup fd is the inner adapter's and lookups pass straight through")   \
  X(HomogeneityEnforced,                                                                          \
    "a batch whose layouts differ from objects[0] throws std::invalid_argument naming the "       \
    "index, with no task, no temp and nothing stored")                                            \
  X(AllOrNothingStore,                                                                            \
    "any failure (temp allocation, serde submit/serialize at any pair, inner submit/store) "      \
    "completes the store once as failure(0) with every temp released")                            \
  X(AllOrNothingLoad,                                                                             \
    "any failure (temp allocation, inner submit/query, an inner bitmap of the wrong size, serde " \
    "submit/query/deserialize) completes the load once with an all-zero bitmap and every temp "   \
    "released")                                                                                   \
  X(PartialLoadKeepsBitmap,                                                                       \
    "a partial inner load keeps its bitmap; only its set bits are deserialized")                  \
  X(TempsReleased, "L1 usage returns to its baseline after every completed store and load")       \
  X(CloseFailsInFlightTasks,                                                                      \
    "close() completes every in-flight task as failed exactly once and releases its temps; "      \
    "results completed before close() stay retrievable once")                                     \
  X(StoreBytesAreInners,                                                                          \
    "re-storing keys the inner already holds: every store reports exactly the bytes its inner "   \
    "store reported")                                                                             \
  X(PassThroughMatchesInner,                                                                      \
    "unlock, delete, usage, eviction support, listeners and status are the inner adapter's")      \
  X(SameKeyInFlight,                                                                              \
    "two stores, then two loads, of the same keys in flight at once all complete correctly")      \
  X(CloseReleasesResources,                                                                       \
    "close() closes the inner adapter and the serde processor; the process returns to its fd "    \
    "and thread counts before the wrapper and its collaborators were made")                       \
  X(StatefulModel,                                                                                \
    "[stateful] stores and loads of several layouts, each possibly hit by an injected failure, "  \
    "lookups, unlocks and deletes on one wrapper match a model; temps are back after each step")  \
  X(ResourcesBoundedOverManyTasks,                                                                \
    "hundreds of tasks leave fds, threads and L1 where a warmed-up wrapper had them, and no "     \
    "reference to a caller buffer once its task completed")                                       \
  X(LentBuffersReleasedOnFailure,                                                                 \
    "over a lending inner (the reference mock): after every store -- successful, failed in the "  \
    "serde, or failed by close() -- the inner's lent_bytes_outstanding() is back at 0, a failed " \
    "store leaves its keys absent, and stored keys load back the serde round trip")
