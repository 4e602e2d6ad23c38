// File: lmcache/wrapper/adapter_factory.h
//
// create_l2_adapter(): the one entry point that builds an L2 adapter from its JSON config,
// including serde wrapping. `{"type": "mock", ..., "serde": {"type": "fp8", ...}}` builds the
// "mock" adapter from the rest of the config, a serde processor from the "serde" object (see
// lmcache/serde/serde_registry.h), and wraps both in a SerdeL2AdapterWrapper whose temps live in
// ctx.l1_manager. An optional "serde_wrapper" object sets that wrapper's options over
// `wrapper_options` (wrapper_options_from_json(): inline thresholds, the hand-off cost,
// finish_on_submit). Without "serde" it is create_registered_l2_adapter().
#pragma once

#include "lmcache/l2/adapter_registry.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache {

// create_l2_adapter()
//
// Throws std::invalid_argument for a bad config, naming the key: a "serde" value that is not an
// object or has no string "type", an unknown serde or adapter type (listing the registered
// ones), unknown keys, a bad "serde_wrapper" object; or when "serde" is present but ctx.l1_manager
// is null. The factory of each serde is called once per wrapped adapter, so each adapter gets its
// own processor.
L2AdapterPtr create_l2_adapter(const Json& config, const AdapterContext& ctx = {},
                               SerdeWrapperOptions wrapper_options = {});

}  // namespace lmcache
