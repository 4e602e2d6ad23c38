#include "lmcache/serde/chain_serde.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/core/host_buffer_pool.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache {

namespace {

MemoryLayoutDesc byte_layout(std::size_t bytes) {
  return MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8);
}

// An intermediate byte buffer of `bytes` from the process's pool. Uninitialised: every stage
// writes the bytes it hands on, and the next one reads only those (the logical size).
MemoryObjPtr intermediate(std::size_t bytes) {
  std::shared_ptr<std::byte> buf =
      HostBufferPool::process_default().acquire(bytes, BufferFill::kUninitialized);
  std::byte* data = buf.get();
  return std::make_shared<MemoryObj>(std::move(buf), data, HostBufferPool::rounded_size(bytes),
                                     byte_layout(bytes));
}

std::vector<ChainStage> checked(std::vector<ChainStage> stages) {
  if (stages.empty()) throw std::invalid_argument("chain serde: no stages");
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (!stages[i].serializer || !stages[i].deserializer || !stages[i].exact_size) {
      throw std::invalid_argument("chain serde: stage " + std::to_string(i) + " is incomplete");
    }
  }
  return stages;
}

}  // namespace

ChainStage make_chain_stage(const Json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument(std::string("a chain stage must be a JSON object, got ") +
                                config.type_name());
  }
  auto it = config.find("type");
  if (it == config.end() || !it->is_string()) {
    throw std::invalid_argument("a chain stage needs a string 'type'");
  }
  const std::string type = *it;
  Json kwargs = config;
  kwargs.erase("type");
  if (kwargs.contains("max_workers")) {
    throw std::invalid_argument("chain stage '" + type +
                                "': max_workers belongs to the chain, not to a stage");
  }
  ChainStage stage;
  if (type == kFp8SerdeType) {
    const Fp8SerdeConfig c = Fp8SerdeConfig::from_json(kwargs);
    stage.serializer = std::make_shared<Fp8Serializer>(c.options);
    stage.deserializer = std::make_shared<Fp8Deserializer>(c.options);
    stage.exact_size = [](const MemoryLayoutDesc& l) { return l.total_elements(); };
  } else if (type == kChecksumSerdeType) {
    ConfigReader(kwargs, "checksum serde config").finish();
    stage.serializer = std::make_shared<ChecksumSerializer>();
    stage.deserializer = std::make_shared<ChecksumDeserializer>();
    stage.exact_size = [](const MemoryLayoutDesc& l) {
      return l.total_bytes() + kChecksumHeaderBytes;
    };
  } else if (type == kAesGcmSerdeType || type == kEncryptSerdeType) {
    const AesGcmSerdeConfig c = AesGcmSerdeConfig::from_json(
        kwargs, type == kEncryptSerdeType ? AesGcmFlavor::kEncrypt : AesGcmFlavor::kAesGcm);
    stage.serializer = std::make_shared<AesGcmSerializer>(c.options);
    stage.deserializer = std::make_shared<AesGcmDeserializer>(c.options);
    stage.exact_size = [](const MemoryLayoutDesc& l) {
      return l.total_bytes() + kAesGcmOverheadBytes;
    };
  } else if (type == kChainSerdeType) {
    throw std::invalid_argument("chain stages cannot be chains");
  } else {
    throw std::invalid_argument("unknown chain stage type '" + type +
                                "' (stages are built-in serdes: fp8, checksum, aesgcm, encrypt)");
  }
  return stage;
}

ChainSerializer::ChainSerializer(std::vector<ChainStage> stages)
    : stages_(checked(std::move(stages))) {}

ChainDeserializer::ChainDeserializer(std::vector<ChainStage> stages)
    : stages_(checked(std::move(stages))) {}

std::size_t ChainSerializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  std::size_t bytes = stages_[0].serializer->estimate_serialized_size(layout);
  for (std::size_t i = 1; i < stages_.size(); ++i) {
    bytes = stages_[i].serializer->estimate_serialized_size(byte_layout(bytes));
  }
  return bytes;
}

std::size_t ChainSerializer::serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  MemoryObjPtr held;  // keeps the current intermediate alive
  const MemoryObj* cur = &src;
  for (std::size_t i = 0; i + 1 < stages_.size(); ++i) {
    MemoryObjPtr next =
        intermediate(stages_[i].serializer->estimate_serialized_size(cur->layout()));
    next->set_used_size(stages_[i].serializer->serialize(*cur, *next, key));
    held = std::move(next);
    cur = held.get();
  }
  return stages_.back().serializer->serialize(*cur, dst, key);
}

void ChainDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  // sizes[i]: the exact bytes stage i wrote for this destination, i < stages - 1.
  std::vector<std::size_t> sizes;
  MemoryLayoutDesc layout = dst.layout();
  for (std::size_t i = 0; i + 1 < stages_.size(); ++i) {
    sizes.push_back(stages_[i].exact_size(layout));
    layout = byte_layout(sizes.back());
  }
  MemoryObjPtr held;
  const MemoryObj* cur = &src;
  for (std::size_t i = stages_.size(); i-- > 1;) {
    MemoryObjPtr out = intermediate(sizes[i - 1]);
    stages_[i].deserializer->deserialize(*cur, *out, key);
    held = std::move(out);
    cur = held.get();
  }
  stages_[0].deserializer->deserialize(*cur, dst, key);
}

namespace {

// The stages of a chain config's kwargs, and its max_workers.
std::vector<ChainStage> chain_stages(const Json& kwargs, std::size_t* workers) {
  ConfigReader reader(kwargs, "chain serde config");
  const Json* stages_json = reader.raw("stages");
  if (stages_json == nullptr) reader.error("'stages' is required (a non-empty array)");
  if (!stages_json->is_array() || stages_json->empty()) {
    reader.error("'stages' must be a non-empty array of serde configs");
  }
  *workers = static_cast<std::size_t>(reader.get_int("max_workers", 1, 1, 1024));
  reader.finish();
  std::vector<ChainStage> stages;
  for (std::size_t i = 0; i < stages_json->size(); ++i) {
    try {
      stages.push_back(make_chain_stage((*stages_json)[i]));
    } catch (const std::invalid_argument& e) {
      reader.error("stage " + std::to_string(i) + ": " + e.what());
    }
  }
  return stages;
}

}  // namespace

ChainStage make_serde_pair(const Json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument(std::string("a serde config must be a JSON object, got ") +
                                config.type_name());
  }
  auto it = config.find("type");
  if (it == config.end() || !it->is_string()) {
    throw std::invalid_argument("a serde config needs a string 'type'");
  }
  Json rest = config;
  if (*it != kChainSerdeType) {
    rest.erase("max_workers");
    return make_chain_stage(rest);
  }
  rest.erase("type");
  std::size_t workers = 1;
  std::vector<ChainStage> stages = chain_stages(rest, &workers);
  ChainStage pair;
  pair.serializer = std::make_shared<ChainSerializer>(stages);
  pair.deserializer = std::make_shared<ChainDeserializer>(stages);
  pair.exact_size = [stages](const MemoryLayoutDesc& layout) {
    std::size_t bytes = stages[0].exact_size(layout);
    for (std::size_t i = 1; i < stages.size(); ++i)
      bytes = stages[i].exact_size(byte_layout(bytes));
    return bytes;
  };
  return pair;
}

SerdeProcessorPtr make_chain_serde_processor(const Json& kwargs) {
  std::size_t workers = 1;
  std::vector<ChainStage> stages = chain_stages(kwargs, &workers);
  return std::make_unique<AsyncSerdeProcessor>(std::make_shared<ChainSerializer>(stages),
                                               std::make_shared<ChainDeserializer>(stages),
                                               workers);
}

}  // namespace lmcache
