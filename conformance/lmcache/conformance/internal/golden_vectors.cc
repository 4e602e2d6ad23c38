#include "lmcache/conformance/internal/golden_vectors.h"

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <utility>

#include "lmcache/conformance/plain_objects.h"
#include "lmcache/core/config.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/hex.h"

namespace lmcache::conformance_internal {

extern const char* const kFrameVectorsJson;  // golden_vectors_data.cc (generated)
extern const char* const kLmcrVectorsJson;

namespace {

std::string unhex_text(const Json& field) {
  std::optional<std::string> bytes = bytes_from_hex(field.get<std::string>());
  if (!bytes) throw std::runtime_error("a field is not hex");
  return std::move(*bytes);
}

std::vector<std::byte> unhex(const Json& field) {
  const std::string bytes = unhex_text(field);
  const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
  return std::vector<std::byte>(first, first + bytes.size());
}

// Parses one vector with `parse`, naming it in any error (nlohmann's included).
void add(std::vector<GoldenVector>& out, const std::string& name,
         const std::function<GoldenVector()>& parse) {
  try {
    out.push_back(parse());
  } catch (const std::exception& e) {
    throw std::runtime_error("golden vector " + name + ": " + e.what());
  }
}

// A keyed frame of raw bytes (checksum, aesgcm, encrypt): the payload in, the same bytes out.
GoldenVector byte_vector(const std::string& type, const std::string& name, const Json& v,
                         bool exact_frame) {
  std::vector<std::byte> payload = unhex(v.at("payload"));
  const std::string chunk_hash = unhex_text(v.at("chunk_hash"));
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
  GoldenVector g{
      type,    std::move(what),      std::move(key), conformance::byte_layout(payload.size()),
      payload, unhex(v.at("frame")), payload,        exact_frame};
  g.raw_bytes = true;
  return g;
}

// A value frame (fp8, chain): float32, float16 or bfloat16 values in, the values the frame
// holds out in the same dtype.
GoldenVector value_vector(const std::string& type, std::string name, const Json& v, ObjectKey key) {
  const auto elements = v.at("elements").get<std::int64_t>();
  const MemoryLayoutDesc layout =
      MemoryLayoutDesc::single({elements}, dtype_from_name(v.at("dtype").get<std::string>()));
  GoldenVector g{type,
                 std::move(name),
                 std::move(key),
                 layout,
                 unhex(v.at("input")),
                 unhex(v.at("frame")),
                 unhex(v.at("decoded")),
                 true};
  g.decode_only = v.value("decode_only", false);
  if (g.input.size() != layout.total_bytes() || g.decoded.size() != layout.total_bytes()) {
    throw std::runtime_error("sizes disagree with its element count");
  }
  return g;
}

std::vector<GoldenVector> parse() {
  const Json frames = Json::parse(kFrameVectorsJson);
  std::vector<GoldenVector> out;
  for (const char* type : {"checksum", "aesgcm", "encrypt"}) {
    std::size_t i = 0;
    for (const Json& v : frames.at(type)) {
      const std::string name = std::string(type) + " vector " + std::to_string(++i);
      // aesgcm and encrypt frames carry a random IV: any serializer's frame differs.
      const bool exact = std::string(type) == "checksum";
      add(out, name, [&] { return byte_vector(type, name, v, exact); });
    }
  }
  std::size_t i = 0;
  for (const Json& v : frames.at("fp8")) {
    std::string name = "fp8 vector " + std::to_string(++i);
    add(out, name, [&] {
      return value_vector(
          "fp8",
          name + " (" + v.at("fp8_dtype").get<std::string>() + " over " +
              v.at("dtype").get<std::string>() + ", " +
              (v.value("decode_only", false) ? std::string("every code")
                                             : v.at("overflow").get<std::string>()) +
              ")",
          v, ObjectKey("golden", "m", 0));
    });
  }
  i = 0;
  for (const Json& v : frames.at("chain")) {
    const std::string name = "chain vector " + std::to_string(++i);
    add(out, name, [&] {
      std::string stages;
      bool exact = true;  // no stage draws an IV
      for (const Json& s : v.at("stages")) {
        const std::string type = s.at("type").get<std::string>();
        stages += (stages.empty() ? "" : " -> ") + type;
        exact = exact && type != "aesgcm" && type != "encrypt" && type != "lmcr";
      }
      GoldenVector g = value_vector("chain", name + " (" + stages + ")", v,
                                    ObjectKey(unhex_text(v.at("chunk_hash")), "m", 0));
      g.exact_frame = exact;
      return g;
    });
  }
  // LMCache's frozen LMCR records: Deflate output is not canonical across zlib versions, so a
  // serializer's frame need only read back.
  const Json lmcr = Json::parse(kLmcrVectorsJson);
  for (const Json& v : lmcr.at("vectors")) {
    const std::string name = "lmcr vector " + v.at("name").get<std::string>();
    add(out, name, [&] {
      std::vector<std::byte> payload = unhex(v.at("payload"));
      GoldenVector g{"lmcr",
                     name,
                     ObjectKey("golden", "m", 0),
                     conformance::byte_layout(payload.size()),
                     payload,
                     unhex(v.at("record")),
                     payload,
                     false};
      g.raw_bytes = true;
      return g;
    });
  }
  return out;
}

}  // namespace

const std::vector<GoldenVector>& golden_vectors() {
  static const std::vector<GoldenVector> vectors = parse();
  return vectors;
}

}  // namespace lmcache::conformance_internal
