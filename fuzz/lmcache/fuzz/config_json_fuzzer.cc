// config_json_fuzzer: the serde and adapter config parsers, over any text.
//
// Configs come from users: files, command lines (lmcache-conform --adapter, lmcache-serde
// --config), deployment templates. Each input is parsed as JSON, as the programs parse it, and
// the value is handed to every serde and adapter config parser; the "serde" object of an adapter
// config goes to the serde ones too, as create_l2_adapter() hands it on. Nothing is built that
// starts threads or touches storage: the parsers alone, and the serde pair make_serde_pair()
// builds. Beyond ASan and UBSan, it checks:
//   - every parser returns or throws std::invalid_argument naming the problem, as each header
//     says: a JSON library exception (a type_error from a wrong-typed value, an out_of_range)
//     or any other type escaping a parser is a finding;
//   - SerdeConfig::to_json() is the inverse of from_json();
//   - a serde config that make_serde_pair() accepts works: its estimate bounds its exact size,
//     and a float32 object it serializes (exactly representable in fp8, so every serde must give
//     it back unchanged) is written in exactly that size and deserialized back bit for bit.
//
// master_key_path is the one key that names a file: the harness maps its value to a fixed set
// ("missing", "dir", "empty", "null", anything else the test key in fuzz/testdata/), so that a
// fuzzer never reads files of the machine it runs on.
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/fuzz/fuzz_support.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_config.h"

namespace lmcache::fuzz_internal {
namespace {

std::string testdata(const char* name) {
  return std::string(LMCACHE_FUZZ_TESTDATA_DIR) + "/" + name;
}

// Every "master_key_path" string, at any depth, replaced by a path of the fixed set.
void pin_key_paths(Json& j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "master_key_path" && it->is_string()) {
        const std::string v = *it;
        *it = v == "missing" ? testdata("missing.key")
              : v == "dir"   ? testdata("")
              : v == "empty" ? testdata("empty.key")
              : v == "null"  ? std::string("/dev/null")
                             : testdata("aesgcm_test.key");
      } else {
        pin_key_paths(*it);
      }
    }
  } else if (j.is_array()) {
    for (Json& e : j) pin_key_paths(e);
  }
}

// Runs `parse`; true when it accepted the config. Any exception but std::invalid_argument fails.
bool parses(const char* parser, const std::function<void()>& parse) {
  try {
    parse();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  } catch (...) {
    LMCACHE_FUZZ_FAIL(std::string(parser) + " threw " + describe_current_exception());
  }
}

// An accepted serde config must give a working serde (see the top of the file).
void check_serde_pair(const ChainStage& pair, const std::string& config) {
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({2, 3}, DType::kFloat32);
  const float values[6] = {0.0f, 1.0f, -2.0f, 0.5f, 4.0f, -0.25f};
  MemoryObjPtr src = MemoryObj::allocate(layout);
  std::memcpy(src->data(), values, sizeof(values));
  const std::size_t exact = pair.exact_size(layout);
  const std::size_t estimate = pair.serializer->estimate_serialized_size(layout);
  LMCACHE_FUZZ_CHECK(estimate >= exact, config + ": estimate " + std::to_string(estimate) +
                                            " < exact size " + std::to_string(exact));
  MemoryObjPtr frame = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(estimate)}, DType::kUInt8));
  const ObjectKey key("\x01\x02\x03\x04\x05\x06\x07\x08\x09", "fuzz", 0, 0, "tenant");
  std::size_t written = 0;
  try {
    written = pair.serializer->serialize(*src, *frame, key);
  } catch (const std::invalid_argument&) {
    return;  // a stage that cannot take its input (fp8 after a byte stage): refused, documented
  } catch (const std::runtime_error&) {
    return;  // a backend that is not here (kernel "cuda" without a GPU), documented
  } catch (...) {
    LMCACHE_FUZZ_FAIL(config + ": serialize threw " + describe_current_exception());
  }
  LMCACHE_FUZZ_CHECK(written == exact, config + ": wrote " + std::to_string(written) +
                                           " bytes, exact size " + std::to_string(exact));
  frame->set_used_size(written);
  MemoryObjPtr back = MemoryObj::allocate(layout);
  try {
    pair.deserializer->deserialize(*frame, *back, key);
  } catch (...) {
    LMCACHE_FUZZ_FAIL(config + ": its own frame failed to load: " + describe_current_exception());
  }
  LMCACHE_FUZZ_CHECK(std::memcmp(back->data(), values, sizeof(values)) == 0,
                     config + ": the object did not come back unchanged");
}

void check_serde_config(const Json& j) {
  parses("SerdeConfig::from_json", [&] {
    const SerdeConfig c = SerdeConfig::from_json(j);
    LMCACHE_FUZZ_CHECK(c.to_json() == j,
                       "SerdeConfig::to_json() of " + j.dump() + " gave " + c.to_json().dump());
  });
  ChainStage pair;
  if (parses("make_serde_pair", [&] { pair = make_serde_pair(j); })) {
    LMCACHE_FUZZ_CHECK(pair.serializer && pair.deserializer && pair.exact_size,
                       "make_serde_pair(" + j.dump() + ") returned an incomplete pair");
    check_serde_pair(pair, j.dump());
  }
}

// The whole input is the JSON text.
void fuzz_one(FuzzInput& in) {
  const std::span<const std::uint8_t> text = in.rest();
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return;
  pin_key_paths(j);
  check_serde_config(j);
  parses("Fp8SerdeConfig::from_json", [&] { Fp8SerdeConfig::from_json(j); });
  parses("AesGcmSerdeConfig::from_json", [&] { AesGcmSerdeConfig::from_json(j); });
  parses("MockL2Adapter::parse_config", [&] { MockL2Adapter::parse_config(j); });
  parses("RespAdapterConfig::parse", [&] { resp::RespAdapterConfig::parse(j); });
  parses("FsAdapterConfig::parse", [&] { fs::FsAdapterConfig::parse(j); });
  if (j.is_object() && j.contains("serde")) {
    // create_l2_adapter() takes "serde" out and hands it to the serde registry.
    check_serde_config(j["serde"]);
    Json inner = j;
    inner.erase("serde");
    parses("MockL2Adapter::parse_config", [&] { MockL2Adapter::parse_config(inner); });
    parses("RespAdapterConfig::parse", [&] { resp::RespAdapterConfig::parse(inner); });
    parses("FsAdapterConfig::parse", [&] { fs::FsAdapterConfig::parse(inner); });
  }
}

}  // namespace
}  // namespace lmcache::fuzz_internal

LMCACHE_FUZZ_TARGET(lmcache::fuzz_internal::fuzz_one)
