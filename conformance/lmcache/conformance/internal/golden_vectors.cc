#include "lmcache/conformance/internal/golden_vectors.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "lmcache/core/config.h"
#include "lmcache/core/hex.h"

namespace lmcache::conformance_internal {

extern const char* const kFrameVectorsJson;  // golden_vectors_data.cc (generated)
extern const char* const kLmcrVectorsJson;

namespace {

std::vector<std::byte> unhex(const Json& field, const std::string& name) {
  const std::optional<std::string> bytes = bytes_from_hex(field.get<std::string>());
  if (!bytes) throw std::runtime_error("golden vector " + name + ": a field is not hex");
  std::vector<std::byte> out(bytes->size());
  std::memcpy(out.data(), bytes->data(), bytes->size());
  return out;
}

std::string text(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

MemoryLayoutDesc bytes_layout(std::size_t n) {
  return MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8);
}

// A keyed frame (checksum, aesgcm, encrypt): payload bytes in, the same bytes out.
GoldenVector byte_vector(const std::string& type, std::size_t index, const Json& v,
                         bool exact_frame) {
  const std::string name = type + " vector " + std::to_string(index);
  std::vector<std::byte> payload = unhex(v.at("payload"), name);
  const std::string chunk_hash = text(unhex(v.at("chunk_hash"), name));
  ObjectKey key = v.contains("model_name")
                      ? ObjectKey(chunk_hash, v.at("model_name").get<std::string>(),
                                  v.at("kv_rank").get<std::int64_t>(),
                                  v.at("object_group_id").get<std::int64_t>(),
                                  v.at("cache_salt").get<std::string>())
                      : ObjectKey(chunk_hash, "m", 0);
  std::string what = name;
  if (v.contains("aes_bits")) {
    what += " (aes-" + std::to_string(v.at("aes_bits").get<int>()) +
            (v.at("bind_key").get<bool>() ? ", bind_key" : "") + ", master key " +
            v.at("master_key").get<std::string>() + ")";
  }
  const MemoryLayoutDesc layout = bytes_layout(payload.size());
  return GoldenVector{type,    std::move(what), std::move(key),
                      layout,  payload,         unhex(v.at("frame"), name),
                      payload, exact_frame};
}

// A value frame (fp8, chain): float32 values in, the values the frame holds out.
GoldenVector value_vector(const std::string& type, std::string name, const Json& v, ObjectKey key) {
  if (v.at("dtype") != "float32") throw std::runtime_error(name + ": dtype is not float32");
  const auto elements = v.at("elements").get<std::int64_t>();
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({elements}, DType::kFloat32);
  GoldenVector g{type,
                 std::move(name),
                 std::move(key),
                 layout,
                 unhex(v.at("input"), type),
                 unhex(v.at("frame"), type),
                 unhex(v.at("decoded"), type),
                 true};
  if (g.input.size() != layout.total_bytes() || g.decoded.size() != layout.total_bytes()) {
    throw std::runtime_error("golden vector " + g.name + ": sizes disagree with its elements");
  }
  return g;
}

std::vector<GoldenVector> parse() {
  const Json frames = Json::parse(kFrameVectorsJson);
  std::vector<GoldenVector> out;
  std::size_t i = 0;
  for (const Json& v : frames.at("checksum")) out.push_back(byte_vector("checksum", ++i, v, true));
  for (const char* type : {"aesgcm", "encrypt"}) {
    i = 0;
    for (const Json& v : frames.at(type)) out.push_back(byte_vector(type, ++i, v, false));
  }
  i = 0;
  for (const Json& v : frames.at("fp8")) {
    const std::string name = "fp8 vector " + std::to_string(++i) + " (" +
                             v.at("fp8_dtype").get<std::string>() + ", " +
                             v.at("overflow").get<std::string>() + ")";
    out.push_back(value_vector("fp8", name, v, ObjectKey("golden", "m", 0)));
  }
  i = 0;
  for (const Json& v : frames.at("chain")) {
    std::string stages;
    bool exact = true;  // no stage draws an IV
    for (const Json& s : v.at("stages")) {
      const std::string type = s.at("type").get<std::string>();
      stages += (stages.empty() ? "" : " -> ") + type;
      exact = exact && type != "aesgcm" && type != "encrypt" && type != "lmcr";
    }
    const std::string name = "chain vector " + std::to_string(++i) + " (" + stages + ")";
    const std::string chunk_hash = text(unhex(v.at("chunk_hash"), name));
    out.push_back(value_vector("chain", name, v, ObjectKey(chunk_hash, "m", 0)));
    out.back().exact_frame = exact;
  }
  // LMCache's frozen LMCR records: Deflate output is not canonical across zlib versions, so a
  // serializer's frame need only read back.
  const Json lmcr = Json::parse(kLmcrVectorsJson);
  for (const Json& v : lmcr.at("vectors")) {
    const std::string name = "lmcr vector " + v.at("name").get<std::string>();
    std::vector<std::byte> payload = unhex(v.at("payload"), name);
    const MemoryLayoutDesc layout = bytes_layout(payload.size());
    out.push_back(GoldenVector{"lmcr", name, ObjectKey("golden", "m", 0), layout, payload,
                               unhex(v.at("record"), name), payload, false});
  }
  return out;
}

}  // namespace

const std::vector<GoldenVector>& golden_vectors() {
  static const std::vector<GoldenVector> vectors = parse();
  return vectors;
}

}  // namespace lmcache::conformance_internal
