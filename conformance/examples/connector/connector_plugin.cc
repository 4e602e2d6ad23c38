// Run time: vendor::MapConnector under the conformance kit, for
//   lmcache-conform --connector-plugin libvendor_connector_plugin.so
#include "lmcache/conformance/connector_plugin.h"
#include <memory>

#include "map_connector.h"

// The factory (optional here: MapConnector is default-constructible) builds one fresh connector
// per adapter the kit builds; a connector to a real store would take its address here.
LMCACHE_CONFORMANCE_CONNECTOR(vendor::MapConnector,
                              [] { return std::make_unique<vendor::MapConnector>(); })
