#include "lmcache/serde/serde_registry.h"

#include <stdexcept>
#include <utility>

#include "lmcache/core/factory_registry.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/lmcr_serde.h"

namespace lmcache {

namespace {

using SerdeRegistry = FactoryRegistry<SerdeFactory>;

SerdeRegistry& registry() {
  // Built-ins are registered on first use, so that no static-initialisation order is involved.
  static SerdeRegistry instance("serde type", [](SerdeRegistry& r) {
    r.add(std::string(kFp8SerdeType), &make_fp8_serde_processor);
    r.add(std::string(kChecksumSerdeType), &make_checksum_serde_processor);
    r.add(std::string(kAesGcmSerdeType), &make_aesgcm_serde_processor);
    r.add(std::string(kEncryptSerdeType), &make_encrypt_serde_processor);
    r.add(std::string(kLmcrSerdeType), &make_lmcr_serde_processor);
    r.add(std::string(kChainSerdeType), &make_chain_serde_processor);
  });
  return instance;
}

}  // namespace

void register_serde_factory(std::string name, SerdeFactory factory) {
  registry().add(std::move(name), std::move(factory));
}

bool unregister_serde_factory(std::string_view name) { return registry().remove(name); }

std::vector<std::string> registered_serde_types() { return registry().names(); }

SerdeProcessorPtr create_serde_processor(const Json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument(std::string("Serde config must be a JSON object, got ") +
                                config.type_name());
  }
  auto it = config.find("type");
  if (it == config.end()) throw std::invalid_argument("Serde config missing 'type' field");
  if (!it->is_string()) {
    throw std::invalid_argument("Serde config 'type' must be a string, got " + it->dump());
  }
  return create_serde_processor(SerdeConfig::from_json(config));
}

SerdeProcessorPtr create_serde_processor(const SerdeConfig& config) {
  const SerdeFactory factory = registry().get(config.type);
  const Json kwargs = config.kwargs.is_null() ? Json::object() : config.kwargs;
  SerdeProcessorPtr out = factory(kwargs);
  if (!out) {
    throw std::logic_error("serde factory for '" + config.type + "' returned no processor");
  }
  return out;
}

}  // namespace lmcache
