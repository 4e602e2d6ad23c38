// File: lmcache/conformance/descriptors.h
//
// Descriptors: how a vendor hands an implementation to the conformance kit. Each descriptor is a
// name, factories that build fresh instances (every property builds its own, often several), and
// the declarations the properties need to judge the results: which dtypes a serde accepts, how
// lossy it is, which optional adapter features exist. A declaration never weakens a contract; it
// only decides which inputs are generated and which properties are NotSupported.
//
// The same descriptors feed both ways of plugging in:
//   - link time: INSTANTIATE_TEST_SUITE_P(Vendor, SerdeConformance, ::testing::Values(MySerde()),
//                                         lmcache::conformance::ParamName());
//   - run time:  a plugin's entry point adds them to a Registry (plugin_abi.h), and the runner
//                lmcache-conform instantiates the suites over the registry.
//
// Names become gtest parameter names and report keys: letters, digits and '_' only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/l2_adapter.h"
#include "lmcache/serde/multi_serde.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache::conformance {

// Lossiness
//
// What a round trip may change. A lossless serde must give back every element bit for bit (NaN
// payloads excepted: a NaN must come back as a NaN). A lossy one must keep every finite element
// x within the hard bound |x - y| <= max(hard_abs, hard_rel * |x|); exceeding the soft bound
// max(soft_abs, soft_rel * |x|) (soft <= hard) is a QualityWarning, not a failure.
//
// For fp8 round-to-nearest-even the format gives the bounds (docs/fp8.md §6): e4m3fn
// hard_rel = 2^-4 for normals, hard_abs = 2^-10 in the subnormal range; e5m2 2^-3 and 2^-17.
struct Lossiness {
  bool lossless = true;
  double hard_abs = 0.0;
  double hard_rel = 0.0;
  double soft_abs = 0.0;
  double soft_rel = 0.0;

  static Lossiness Lossless() { return {}; }
  static Lossiness Bounded(double hard_abs, double hard_rel, double soft_abs, double soft_rel) {
    return {false, hard_abs, hard_rel, soft_abs, soft_rel};
  }
};

// IntegrityClaims
//
// What an integrity / confidentiality serde promises about tampered frames (docs/integrity.md).
// Every claim is off by default; a claimed one is held by the Integrity* properties, and the
// properties of a claim not made are NotSupported. "Fails" means deserialize() throws: the
// object is then not claimed as loaded.
struct IntegrityClaims {
  // Every single-bit flip of a frame, every truncation of it, and a changed version byte (at
  // `version_byte_offset`) make deserialize() fail.
  bool detects_corruption = false;
  std::size_t version_byte_offset = 0;
  // A frame deserialized under a key with another chunk_hash fails (checksum's fingerprint,
  // aesgcm's bind_key). The binding covers the first `chunk_hash_bound_bytes` bytes of the hash,
  // each hash zero-padded to that length (checksum: 8, its fingerprint), or the whole hash
  // (0: every byte and the length, as aesgcm's bind_key).
  bool binds_chunk_hash = false;
  std::size_t chunk_hash_bound_bytes = 0;
  // A frame deserialized under a key that differs in any one field (chunk_hash, model_name,
  // kv_rank, object_group_id, cache_salt) fails (aesgcm's bind_key: the whole key is the AAD).
  bool binds_whole_key = false;
  // A frame deserialized under a key with another cache_salt fails (aesgcm's per-tenant key).
  bool binds_cache_salt = false;
  // serialize() draws fresh randomness per call (an IV): the frame's bytes
  // [nonce_offset, nonce_offset + nonce_bytes) must differ across many serializations (>= 100k
  // at standard depth), the payload must not appear in clear, and the byte-comparing
  // determinism properties (DeterministicOutput, DeterministicAcrossThreads, BridgeEquivalence,
  // OneInstanceManyLayouts) are NotSupported.
  bool randomized = false;
  std::size_t nonce_offset = 0;
  std::size_t nonce_bytes = 0;
  // A deserializer holding another secret (a wrong master key): every frame must fail under it.
  std::function<DeserializerPtr()> make_deserializer_with_other_secret;
};

// ReferenceSerde
//
// The reference implementation of a serde type this project knows ("fp8", "checksum",
// "aesgcm", "encrypt", "chain"; docs/integrity.md, docs/fp8.md). A vendor implementation of such a
// type names it here and is then held to it by MatchesReference (both suites): deterministic frames
// byte-identical, every frame readable both ways with the same values, the same verdict
// (rejected or not, and the same values when not) on every corrupted frame, tails included, and
// on frames moved to keys that differ in one field. Build one with reference_serde(config)
// (reference_impls.h) from the config the vendor's type mirrors, e.g. {"type": "aesgcm",
// "master_key_path": "/etc/key", "aes_bits": 256}. Empty (no factories): MatchesReference is
// NotSupported and every other property still runs.
struct ReferenceSerde {
  std::string type;  // the reference's type name, for messages
  std::function<SerializerPtr()> make_serializer;
  std::function<DeserializerPtr()> make_deserializer;
  // The reference draws fresh randomness per frame (aesgcm's IV): frames are compared by size
  // and by decoding them both ways, never byte for byte.
  bool randomized = false;
};

// SerdeUnderTest
//
// A synchronous Serializer / Deserializer pair (serde/serializer.h). The factories must return a
// fresh, independent instance on every call (determinism is checked across instances).
struct SerdeUnderTest {
  std::string name;
  std::function<SerializerPtr()> make_serializer;
  std::function<DeserializerPtr()> make_deserializer;

  // The source dtypes serialize() accepts; the generators draw layouts from these (uint8 only
  // where listed), and every other dtype must be rejected with std::invalid_argument.
  std::vector<DType> input_dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

  Lossiness lossiness;

  // Finite inputs are generated with |x| <= max_abs_input (nullopt: the dtype's whole range).
  // fp8 e4m3fn turns |x| > 464 into NaN, so it declares 448.
  std::optional<double> max_abs_input;
  // Whether NaN / +-inf inputs are generated; when true, a NaN must come back as a NaN and an
  // infinity as the same infinity.
  bool preserves_nan = true;
  bool preserves_inf = true;

  // The multi-output forms (serde/multi_serde.h). Empty: the kit tests the reference bridges
  // single_to_multi_serializer / single_to_multi_deserializer over this pair.
  std::function<MultiSerializerPtr()> make_multi_serializer;
  std::function<MultiDeserializerPtr()> make_multi_deserializer;
  // Slots a multi serializer requires (a null there must be rejected); empty means every slot.
  std::vector<bool> multi_required_slots;

  // Integrity / confidentiality claims (none by default).
  IntegrityClaims integrity;

  // The reference implementation this serde must match, when its type is one the project knows.
  ReferenceSerde reference;
};

// ProcessorUnderTest
//
// An asynchronous SerdeProcessor (serde/serde_processor.h). `make` returns a fresh processor on
// every call. Inputs are drawn from `input_dtypes` with small finite values every serde keeps.
struct ProcessorUnderTest {
  std::string name;
  std::function<SerdeProcessorPtr()> make;
  std::vector<DType> input_dtypes = {DType::kFloat32};
  // The processor's frames differ per call (an encrypting serde): serialized temps are compared
  // by their size and by what they decode to, never byte for byte.
  bool randomized = false;
  // The reference serde the processor's frames must match, pair by pair under each pair's own
  // key (MatchesReference); empty: NotSupported.
  ReferenceSerde reference;
};

// AdapterCapabilities
//
// Optional parts of L2AdapterInterface. A property that needs a missing capability is
// NotSupported, with the capability named in the reason.
struct AdapterCapabilities {
  // delete_keys() removes keys (the interface allows a no-op default).
  bool supports_delete = true;
  // register_listener() listeners see every store (with sizes), load hit and delete.
  bool supports_listeners = true;
  // get_usage() reports exactly the bytes held, in total and per cache_salt.
  bool reports_usage = true;
  // report_status()["locked_key_count"] is the number of keys holding a lookup lock, so that
  // lookup-and-lock / unlock can be observed (the mock adapter has it).
  bool reports_lock_count = false;
};

// ReferenceAdapter
//
// The reference adapter of a storage type this project knows ("resp", "fs", or a native
// connector behind the bridge): `make_pair` returns a fresh adapter under test and a reference
// adapter over the same store and key namespace (for "resp" and "fs", create_l2_adapter() of the
// same config with the same "key_namespace"). AdapterConformance.MatchesReference then holds
// them to one storage format: what either stores, the other finds and loads byte for byte, and
// what either deletes, the other misses. Empty: NotSupported.
//
// `probe_shared_store`: the pair is two instances of the implementation under test itself (two
// bridges over two connectors from a native connector plugin's factory, one key namespace), and
// the kit cannot know whether they share a store (a server: yes; an in-memory map per connector:
// no). The properties then store a probe object through the second and look it up through the
// first: when it misses, MatchesReference is NotSupported and OtherLengthLoadsContained leaves
// out its second phase. When it hits, a second instance must read what the first stored, loads
// of other lengths included (the second has no record of the stored sizes, so the connector
// itself is asked for other lengths).
struct ReferenceAdapter {
  std::string type;  // for messages
  std::function<std::pair<L2AdapterPtr, L2AdapterPtr>()> make_pair;
  bool probe_shared_store = false;
};

// StoredDamage
//
// What AdapterConformance.StoredDamageContained asks done to every object an adapter stored,
// underneath it, in its store: what a disk, a crash mid-write, another writer or an operator
// leaves behind.
enum class StoredDamage : std::uint8_t {
  kTruncated,  // cut to half its length, rounded down
  kExtended,   // one byte appended
  kFlipped,    // one byte of it changed in place, the length kept
  kReplaced,   // no longer a value of the store's own kind (fs: a FIFO nobody writes to, a
               // directory, a symbolic link to /dev/zero; RESP: a list); asked three times a
               // case, so that a function rotating through several replacements shows each
};

// The spelling of `damage` in messages: "truncated", "extended", "flipped", "replaced".
std::string_view stored_damage_name(StoredDamage damage);

// DamageableAdapter
//
// A fresh adapter as make() builds it, in a store (or a part of one) of its own, and a function
// that does `damage` to every object that adapter has stored so far, in its store, and returns
// how many it damaged (the kit stores first, so 0 means the function found nothing: a Fail);
// throws std::runtime_error when it cannot.
struct DamageableAdapter {
  L2AdapterPtr adapter;
  std::function<std::size_t(StoredDamage)> damage;
};

// AdapterUnderTest
//
// An L2 adapter. `make` returns a fresh, empty adapter on every call, with room for a few MiB.
struct AdapterUnderTest {
  std::string name;
  std::function<L2AdapterPtr()> make;
  AdapterCapabilities capabilities;

  // The dtypes of the objects stored; one layout per generated run, drawn from these.
  std::vector<DType> object_dtypes = {DType::kUInt8, DType::kFloat32};

  // What the adapter stores for an object of this layout (usage, listener sizes, bytes
  // transferred). Empty: layout.total_bytes().
  std::function<std::uint64_t(const MemoryLayoutDesc&)> stored_bytes;
  // What a load of a stored object gives back, written into `expected` (same layout, zeroed).
  // Empty: the stored bytes exactly. A serde-wrapping adapter passes its serde round trip here.
  std::function<void(const MemoryObj& stored, MemoryObj& expected)> expected_load;

  // The reference adapter whose storage format this adapter's must be (a vendor "resp" or
  // "fs" adapter, or a native connector the reference bridge also drives); empty: none.
  ReferenceAdapter reference;

  // For an adapter that speaks RESP to a server (the "resp" type, or a vendor's adapter of that
  // kind): a fresh adapter configured for the server at 127.0.0.1:`port`, otherwise as make()
  // builds it. AdapterConformance.HostilePeerFailsCleanly runs it over peers of the kit's that
  // give no data command a valid answer (docs/l2-adapter.md, "Hostile peers"). Empty: that
  // property is NotSupported. `lmcache-conform --adapter` fills it for a "resp" config.
  std::function<L2AdapterPtr(std::uint16_t port)> make_over_resp_peer;

  // For an adapter over a store the kit can reach underneath it (a directory, a server): a fresh
  // adapter and a way to damage what it stored. AdapterConformance.StoredDamageContained stores,
  // damages and loads (docs/l2-adapter.md, "Damaged storage"): an object whose length or kind
  // changed must miss, one whose bytes changed in place must miss when
  // `detects_changed_bytes` (the adapter keeps a checksum of its own, as fs with "checksum":
  // "crc32" does), and the adapter must go on serving other keys. Empty: NotSupported.
  // `lmcache-conform --adapter` fills it for "fs" and "resp" configs.
  std::function<DamageableAdapter()> make_damageable;
  bool detects_changed_bytes = false;

  // A fresh adapter as make() builds it, but holding at most `capacity_bytes` (the bytes
  // get_usage() counts). AdapterConformance.CapacityHonoured fills it past that and deletes
  // (docs/l2-adapter.md, "Capacity"): it never holds more, refuses no store that fits (when
  // capabilities.reports_usage), leaves nothing of a refused store, and what a delete frees is
  // room again. Empty: NotSupported. `lmcache-conform --adapter` fills it for "mock", "fs" and
  // "resp" configs.
  std::function<L2AdapterPtr(std::uint64_t capacity_bytes)> make_with_capacity;

  // The JSON config the adapter is built from with create_l2_adapter() ("serde" object
  // included), when it is built from one. AdapterConformance.ConfigTyposRejected adds a
  // misspelt key beside each of its keys, ConfigValueKindsChecked gives each key a value of
  // another kind, and both require an error naming the key (docs/l2-adapter.md: a typo must not
  // be silently ignored). Empty: those properties are NotSupported.
  // `lmcache-conform --adapter` fills it with the config given.
  std::optional<Json> config;
};

// WrapperUnderTest
//
// An implementation of the serde L2 wrapper (docs/wrapper.md): given an inner adapter, a serde
// processor and the L1Manager holding its temps, it returns the wrapping adapter, which owns the
// first two. The kit composes it with failing serdes and failing inner adapters of its own.
//
// `decorate_inner` (optional) puts an adapter of the descriptor's below the kit's scripted inner
// double, as WrapperRigOptions::decorate_inner does (wrapper_conformance.h): it receives an
// adapter forwarding to the kit's mock and returns what the scripted double forwards to. That is
// how a live adapter answers every store, lookup and load of the wrapper properties (shadowed by
// the kit's mock, which the kit inspects): `lmcache-conform --adapter` does this for a deployed
// config with a serde. Empty: the kit's mock alone (and a second run over a lending mock).
struct WrapperUnderTest {
  std::string name;
  std::function<L2AdapterPtr(L2AdapterPtr inner, SerdeProcessorPtr serde,
                             std::shared_ptr<L1Manager> l1)>
      make;
  std::function<L2AdapterPtr(L2AdapterPtr mock)> decorate_inner;
};

// Printed by gtest in test names and failure messages.
void PrintTo(const SerdeUnderTest& serde, std::ostream* os);
void PrintTo(const ProcessorUnderTest& processor, std::ostream* os);
void PrintTo(const AdapterUnderTest& adapter, std::ostream* os);
void PrintTo(const WrapperUnderTest& wrapper, std::ostream* os);

// ParamName
//
// The 4th argument of INSTANTIATE_TEST_SUITE_P: names each instantiation after the
// descriptor's name, e.g. Vendor/SerdeConformance.RoundTrip/copy_serde.
struct ParamName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    return info.param.name;
  }
};

// is_valid_implementation_name()
//
// True for a non-empty name of letters, digits and '_' (what gtest accepts as a parameter name).
bool is_valid_implementation_name(std::string_view name);

}  // namespace lmcache::conformance
