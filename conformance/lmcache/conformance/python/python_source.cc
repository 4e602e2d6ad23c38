#include "lmcache/conformance/python/python_source.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/conformance/python/internal/python_adapter.h"
#include "lmcache/conformance/python/internal/python_runtime.h"
#include "lmcache/conformance/python/internal/python_serde.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/core/dtype.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::conformance::python {
namespace {

using Json = nlohmann::json;

// The claims a known reference type brings: its dtypes, bounds and integrity (reference_impls.h).
std::optional<SerdeUnderTest> claims_of_type(const Json& mirrors) {
  const std::string type = mirrors.value("type", "");
  if (type == "fp8") {
    const std::string dtype = mirrors.value("fp8_dtype", "float8_e4m3fn");
    if (dtype == "float8_e4m3fn") return reference_fp8_serde(Fp8Format::kE4M3FN);
    if (dtype == "float8_e5m2") return reference_fp8_serde(Fp8Format::kE5M2);
    throw std::invalid_argument("mirrors.fp8_dtype: unknown fp8 dtype '" + dtype + "'");
  }
  if (type == "checksum") return reference_checksum_serde();
  if (type == "lmcr") return reference_lmcr_serde();
  return std::nullopt;
}

std::vector<DType> dtypes_of(const Json& names) {
  std::vector<DType> out;
  for (const Json& n : names) {
    const std::string name = n.get<std::string>();
    auto d = parse_dtype(name);
    if (!d) throw std::invalid_argument("input_dtypes: unknown dtype '" + name + "'");
    out.push_back(*d);
  }
  if (out.empty()) throw std::invalid_argument("input_dtypes: empty");
  return out;
}

// Applies `claims` (lmcache_conformance.declare()'s keywords) to `s`.
void apply_claims(const Json& claims, SerdeUnderTest& s) {
  if (claims.contains("input_dtypes")) s.input_dtypes = dtypes_of(claims["input_dtypes"]);
  if (claims.contains("lossless") && claims["lossless"].get<bool>())
    s.lossiness = Lossiness::Lossless();
  if (claims.contains("bounds")) {
    const Json& b = claims["bounds"];
    s.lossiness = Lossiness::Bounded(b.at("hard_abs").get<double>(), b.at("hard_rel").get<double>(),
                                     b.value("soft_abs", b.at("hard_abs").get<double>()),
                                     b.value("soft_rel", b.at("hard_rel").get<double>()));
  }
  if (claims.contains("max_abs_input")) s.max_abs_input = claims["max_abs_input"].get<double>();
  if (claims.contains("preserves_nan")) s.preserves_nan = claims["preserves_nan"].get<bool>();
  if (claims.contains("preserves_inf")) s.preserves_inf = claims["preserves_inf"].get<bool>();
  if (claims.contains("integrity")) {
    const Json& i = claims["integrity"];
    IntegrityClaims& c = s.integrity;
    for (auto it = i.begin(); it != i.end(); ++it) {
      const std::string& k = it.key();
      if (k == "detects_corruption")
        c.detects_corruption = it->get<bool>();
      else if (k == "version_byte_offset")
        c.version_byte_offset = it->get<std::size_t>();
      else if (k == "binds_chunk_hash")
        c.binds_chunk_hash = it->get<bool>();
      else if (k == "chunk_hash_bound_bytes")
        c.chunk_hash_bound_bytes = it->get<std::size_t>();
      else if (k == "binds_whole_key")
        c.binds_whole_key = it->get<bool>();
      else if (k == "binds_cache_salt")
        c.binds_cache_salt = it->get<bool>();
      else if (k == "randomized")
        c.randomized = it->get<bool>();
      else if (k == "nonce_offset")
        c.nonce_offset = it->get<std::size_t>();
      else if (k == "nonce_bytes")
        c.nonce_bytes = it->get<std::size_t>();
      else
        throw std::invalid_argument("integrity: unknown claim '" + k + "'");
    }
  }
  if (claims.contains("randomized")) s.integrity.randomized = claims["randomized"].get<bool>();
}

// A fresh object from the factory (the GIL held), or `make(factory)` for the kit's own maker.
py::object made_by(const PyRef& factory, const char* maker = nullptr, int workers = 0) {
  try {
    if (maker == nullptr) return factory.get()();
    return bridge().attr(maker)(factory.get(), workers);
  } catch (py::error_already_set& e) {
    rethrow(e, "the Python factory");
  }
}

// A fresh pair's half `which` (0: serializer, 1: deserializer).
py::object make_half(const PyRef& factory, int which) {
  py::object made = made_by(factory);
  try {
    return py::tuple(bridge().attr("split_pair")(made))[static_cast<std::size_t>(which)];
  } catch (py::error_already_set& e) {
    rethrow(e, "the Python factory's result");
  }
}

void register_serde(const PyRef& factory, const std::string& name, const Json& claims,
                    Registry& registry) {
  SerdeUnderTest s;
  if (claims.contains("mirrors")) {
    const Json& mirrors = claims["mirrors"];
    if (auto known = claims_of_type(mirrors)) s = std::move(*known);
    s.reference = reference_serde(mirrors.dump());
  }
  s.make_multi_serializer = nullptr;  // the reference bridges over the pair
  s.make_multi_deserializer = nullptr;
  s.multi_required_slots.clear();
  s.integrity.make_deserializer_with_other_secret = nullptr;
  apply_claims(claims, s);
  s.name = name;
  s.make_serializer = [factory]() -> SerializerPtr {
    py::gil_scoped_acquire gil;
    return std::make_shared<PythonSerializer>(PyRef(make_half(factory, 0)));
  };
  s.make_deserializer = [factory]() -> DeserializerPtr {
    py::gil_scoped_acquire gil;
    return std::make_shared<PythonDeserializer>(PyRef(make_half(factory, 1)));
  };

  ProcessorUnderTest p;
  p.name = name + "_async";
  p.input_dtypes = s.input_dtypes;
  p.randomized = s.integrity.randomized;
  p.reference = s.reference;
  const int workers = claims.value("async_workers", 2);
  if (workers < 1) throw std::invalid_argument("async_workers: must be >= 1");
  p.make = [factory, workers]() -> SerdeProcessorPtr {
    py::gil_scoped_acquire gil;
    return std::make_unique<PythonSerdeProcessor>(
        PyRef(made_by(factory, "async_processor", workers)));
  };
  registry.add_serde(std::move(s));
  registry.add_processor(std::move(p));
}

void register_processor(const PyRef& factory, const std::string& name, const Json& claims,
                        Registry& registry) {
  ProcessorUnderTest p;
  p.name = name;
  if (claims.contains("mirrors")) {
    const Json& mirrors = claims["mirrors"];
    if (auto known = claims_of_type(mirrors)) p.input_dtypes = known->input_dtypes;
    p.reference = reference_serde(mirrors.dump());
  }
  if (claims.contains("input_dtypes")) p.input_dtypes = dtypes_of(claims["input_dtypes"]);
  p.randomized = claims.value("randomized", false);
  p.make = [factory]() -> SerdeProcessorPtr {
    py::gil_scoped_acquire gil;
    return std::make_unique<PythonSerdeProcessor>(PyRef(made_by(factory)));
  };
  registry.add_processor(std::move(p));
}

void register_adapter(const PyRef& factory, const std::string& name, const Json& claims,
                      bool takes_capacity, Registry& registry) {
  AdapterUnderTest a;
  a.name = name;
  AdapterCapabilities& c = a.capabilities;
  c.supports_delete = claims.value("supports_delete", c.supports_delete);
  c.supports_listeners = claims.value("supports_listeners", c.supports_listeners);
  c.reports_usage = claims.value("reports_usage", c.reports_usage);
  c.reports_lock_count = claims.value("reports_lock_count", c.reports_lock_count);
  if (claims.contains("object_dtypes")) a.object_dtypes = dtypes_of(claims["object_dtypes"]);
  a.make = [factory]() -> L2AdapterPtr {
    py::gil_scoped_acquire gil;
    return std::make_unique<PythonL2Adapter>(PyRef(made_by(factory)));
  };
  // A factory that takes max_capacity_bytes= builds an adapter of that capacity
  // (CapacityHonoured, docs/python.md).
  if (takes_capacity) {
    a.make_with_capacity = [factory](std::uint64_t bytes) -> L2AdapterPtr {
      py::gil_scoped_acquire gil;
      try {
        return std::make_unique<PythonL2Adapter>(
            PyRef(bridge().attr("made_with_capacity")(factory.get(), bytes)));
      } catch (py::error_already_set& e) {
        rethrow(e, "the Python factory (max_capacity_bytes=" + std::to_string(bytes) + ")");
      }
    };
  }
  registry.add_adapter(std::move(a));
}

}  // namespace

bool python_support_built() { return true; }

std::string start_interpreter() {
  try {
    ensure_interpreter();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

pid_t fork_with_interpreter() {
  if (!Py_IsInitialized()) return fork();
  py::gil_scoped_acquire gil;
  PyOS_BeforeFork();
  const pid_t pid = fork();
  if (pid == 0) {
    PyOS_AfterFork_Child();
  } else {
    PyOS_AfterFork_Parent();
  }
  return pid;
}

std::string register_python_source(const std::string& spec, Registry& registry) {
  try {
    ensure_interpreter();
    PyRef factory;
    Json described;
    {
      py::gil_scoped_acquire gil;
      try {
        py::object f = bridge().attr("load_factory")(spec);
        described = Json::parse(bridge().attr("describe")(spec, f).cast<std::string>());
        factory = PyRef(std::move(f));
      } catch (py::error_already_set& e) {
        rethrow(e, "loading the factory");
      }
    }
    const std::string kind = described.at("kind").get<std::string>();
    const std::string name = described.at("name").get<std::string>();
    const Json& claims = described.at("claims");
    if (kind == "serde") {
      register_serde(factory, name, claims, registry);
    } else if (kind == "processor") {
      register_processor(factory, name, claims, registry);
    } else {
      register_adapter(factory, name, claims, described.value("takes_capacity", false), registry);
    }
  } catch (const Json::exception& e) {
    return "--python " + spec + ": a claim of declare() has the wrong type: " + e.what();
  } catch (const std::exception& e) {
    return "--python " + spec + ": " + e.what();
  }
  return {};
}

}  // namespace lmcache::conformance::python
