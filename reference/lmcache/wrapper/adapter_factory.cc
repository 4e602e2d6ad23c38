#include "lmcache/wrapper/adapter_factory.h"

#include <stdexcept>

#include "lmcache/serde/serde_config.h"
#include "lmcache/serde/serde_registry.h"

namespace lmcache {

L2AdapterPtr create_l2_adapter(const Json& config, const AdapterContext& ctx,
                               SerdeWrapperOptions wrapper_options) {
  if (!config.is_object() || !config.contains("serde")) {
    if (config.is_object() && config.contains("serde_wrapper")) {
      throw std::invalid_argument(
          "L2 adapter config has a 'serde_wrapper' object but no 'serde': without a serde there "
          "is no wrapper to configure");
    }
    return create_registered_l2_adapter(config, ctx);
  }
  SerdeConfig serde_config = SerdeConfig::from_json(config.at("serde"));
  if (!ctx.l1_manager) {
    throw std::invalid_argument(
        "L2 adapter config has a 'serde' object, but no L1Manager was given to hold the "
        "serde wrapper's temporary buffers (AdapterContext::l1_manager is null)");
  }
  Json inner_config = config;
  inner_config.erase("serde");
  if (const auto it = config.find("serde_wrapper"); it != config.end()) {
    wrapper_options = wrapper_options_from_json(*it, std::move(wrapper_options));
    inner_config.erase("serde_wrapper");
  }
  // Build the serde first: a bad serde config must not leave an inner adapter running.
  SerdeProcessorPtr serde = create_serde_processor(serde_config);
  L2AdapterPtr inner;
  try {
    inner = create_registered_l2_adapter(inner_config, ctx);
  } catch (...) {
    serde->close();
    throw;
  }
  return std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(serde), ctx.l1_manager,
                                                 std::move(wrapper_options));
}

}  // namespace lmcache
