// File: lmcache/serde/chain_serde.h
//
// The "chain" serde: built-in serdes run in sequence (docs/integrity.md):
//   {"type": "chain", "stages": [{"type": "fp8"}, {"type": "checksum"}], "max_workers": 1}
// Store runs the stages in order (each stage's output is the next one's input), load runs them
// in reverse. Typical: fp8 -> checksum (half the bytes, corruption detected), fp8 -> aesgcm.
//
// estimate_serialized_size() composes the stage estimates (stage i+1 is asked about a byte
// buffer of stage i's estimate), so it is an upper bound because each stage's is. The chain's
// frame is the last stage's frame of the previous stage's output; nothing is added.
// Intermediate buffers come from the process's HostBufferPool and go back to it after the call.
//
// Stages are the built-in serdes ("fp8", "checksum", "aesgcm", "encrypt", each with its own
// keys, except max_workers which belongs to the chain); a chain cannot nest. Loading needs each
// stage's exact output size for a layout, which the built-ins have (fp8: one byte per element,
// checksum: +17, aesgcm and encrypt: +29).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

inline constexpr std::string_view kChainSerdeType = "chain";

// ChainStage: one stage of a chain.
struct ChainStage {
  SerializerPtr serializer;
  DeserializerPtr deserializer;
  // The exact number of bytes serialize() writes for an input of this layout.
  std::function<std::size_t(const MemoryLayoutDesc&)> exact_size;
};

// make_chain_stage()
//
// A built-in serde as a stage, from its config ({"type": "fp8" | "checksum" | "aesgcm", ...}).
// Throws std::invalid_argument naming the problem (missing or unknown type, a nested chain, a
// max_workers key, the stage's own config errors).
ChainStage make_chain_stage(const Json& stage_config);

class ChainSerializer final : public Serializer {
 public:
  // Throws std::invalid_argument when `stages` is empty or a stage misses a part.
  explicit ChainSerializer(std::vector<ChainStage> stages);

  // serialize()
  //
  // Runs every stage's serialize() in order under `key`, the last one into `dst`; returns what
  // the last stage wrote. Throws what a stage throws.
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  // The composition of the stages' estimates.
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

 private:
  const std::vector<ChainStage> stages_;
};

class ChainDeserializer final : public Deserializer {
 public:
  // Throws std::invalid_argument when `stages` is empty or a stage misses a part.
  explicit ChainDeserializer(std::vector<ChainStage> stages);

  // deserialize()
  //
  // Runs the stages' deserialize() in reverse order under `key`, the first stage into `dst`.
  // Throws what a stage throws (an integrity stage's failure fails the whole load).
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

 private:
  const std::vector<ChainStage> stages_;
};

// make_serde_pair()
//
// The serializer / deserializer pair of any built-in serde ("fp8", "checksum", "aesgcm",
// "encrypt", "chain") from its full config, as create_serde_processor() would run them; a
// "max_workers" key is accepted and ignored (it sizes a processor, not a pair). For a chain,
// exact_size is the composition of its stages'. Throws std::invalid_argument naming the problem
// (not an object, a missing or unknown type, the type's own config errors). What the conformance
// kit holds a vendor's serde of a known type to (reference_serde(), conformance/reference_impls.h).
ChainStage make_serde_pair(const Json& config);

// make_chain_serde_processor()
//
// The "chain" factory. Config keys: "stages" (a non-empty array of stage configs, required),
// max_workers (integer in [1, 1024], default 1). Errors name the stage by index.
SerdeProcessorPtr make_chain_serde_processor(const Json& kwargs);

}  // namespace lmcache
