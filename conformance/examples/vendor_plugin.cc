// Run time: the same descriptors behind the versioned C entry point, for
//   lmcache-conform --plugin libvendor_conformance_plugin.so
#include "lmcache/conformance/plugin_abi.h"
#include "vendor_copy_serde.h"

LMCACHE_CONFORMANCE_PLUGIN(registry) {
  registry.add_serde(vendor::copy_serde_descriptor());
  registry.add_processor(vendor::copy_processor_descriptor());
}
