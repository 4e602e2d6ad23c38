// Run time: LMCache-style lmcache::connector::MapConnector under the conformance kit, for
//   lmcache-conform --connector-plugin libvendor_connector_plugin.so
// The connector's headers declare LMCache's own names (lmcache::connector::Completion,
// IStorageConnector, ConnectorBase); this file includes them beside the kit's, unmodified.
#include "lmcache/conformance/connector_plugin.h"
#include "map_connector.h"

LMCACHE_CONFORMANCE_CONNECTOR(lmcache::connector::MapConnector)
