// AdapterConformance.HostilePeerFailsCleanly: an adapter that talks RESP to a server, over a
// peer that gives no data command a valid answer (docs/l2-adapter.md, "Hostile peers"). A
// deployment's store is a peer the adapter does not control: an error reply (Redis under
// maxmemory answers -OOM), a protocol error, a length no honest reply has, a connection cut or
// reset mid-reply. Whatever it does, no store may be reported done, no key found or loaded, no
// task left pending past the adapter's own deadline, and the process must survive (a length
// taken at its word is an allocation of a terabyte) and close the adapter.
//
// Every misbehaviour of the catalogue (internal/hostile_resp_peer.h) runs on every case, each
// over a peer of its own and a fresh adapter: a store, a lookup and a load of the same batch
// (1-4 keys, one layout from 0 B to chunk size).
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/hostile_resp_peer.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// How long one task over a hostile peer may take: a peer that stops mid-reply is waited out by
// the adapter's own request deadline, which docs/l2-adapter.md bounds by this.
std::chrono::milliseconds hostile_timeout() { return scaled(std::chrono::seconds(30)); }

std::string set_bits(const Bitmap& bits) {
  std::string out;
  for (std::size_t i = 0; i < bits.size(); ++i) {
    if (!bits.test(i)) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(i);
  }
  return out;
}

void run_case(const AdapterUnderTest& aut, const Misbehaviour& m) {
  const std::size_t n = *uniform_in_range<std::size_t>(1, 4);
  const std::vector<ObjectKey> keys = key_family(*gen_seed(), n);
  const std::size_t chunk =
      std::min<std::size_t>(current_profile().max_chunk_bytes, std::size_t{4} << 20);
  // One layout for every object: an adapter may require one per submit (a serde wrapper).
  const MemoryLayoutDesc layout = *gen_layout_of_any_size(aut.object_dtypes, chunk);
  std::vector<MemoryObjPtr> objs, dsts;
  for (std::size_t i = 0; i < n; ++i) {
    objs.push_back(make_object(layout));
    fill_bytes(objs.back()->physical_bytes(), *gen_seed());
    dsts.push_back(make_object(layout));
  }
  const std::string who = "over a peer answering every data command with " + m.name + ", " +
                          std::to_string(n) + " key(s) of " + std::to_string(layout.total_bytes()) +
                          " bytes: ";
  const std::string late = " did not complete within " + std::to_string(hostile_timeout().count()) +
                           " ms (an adapter must bound what it waits for a peer)";

  HostileRespPeer peer(m);
  L2AdapterPtr a = aut.make_over_resp_peer(peer.port());
  require(a != nullptr, "make_over_resp_peer() returned null");
  Closer closer{a.get()};

  const TaskId store_id = a->submit_store_task(keys, objs);
  std::map<TaskId, L2StoreResult> popped;
  require(pop_stores_until(*a, {store_id}, &popped, hostile_timeout()).empty(),
          who + "the store" + late);
  const L2StoreResult& stored = popped.at(store_id);
  require(!stored.is_successful(), who + "the store is reported done (" +
                                       std::to_string(stored.bytes_transferred()) +
                                       " bytes), but no reply of the peer said so");

  const TaskId lookup_id = a->submit_lookup_and_lock_task(keys);
  const std::optional<Bitmap> found =
      poll_until([&] { return a->query_lookup_and_lock_result(lookup_id); }, hostile_timeout());
  require(found.has_value(), who + "the lookup" + late);
  require(found->none(), who + "the lookup reports key(s) " + set_bits(*found) +
                             " present, but the peer never "
                             "answered that any was");

  const TaskId load_id = a->submit_load_task(keys, dsts);
  const std::optional<Bitmap> loaded =
      poll_until([&] { return a->query_load_result(load_id); }, hostile_timeout());
  require(loaded.has_value(), who + "the load" + late);
  require(loaded->none(), who + "the load reports key(s) " + set_bits(*loaded) +
                              " loaded, but the peer never sent a value");
  a->close();
}

}  // namespace

Verdict HostilePeerFailsCleanly(const AdapterUnderTest& aut) {
  if (!aut.make_over_resp_peer) {
    return Verdict::not_supported(
        "the descriptor gives no way to build the adapter over a RESP server of the kit's "
        "(AdapterUnderTest::make_over_resp_peer)");
  }
  return run_rc_property(rc_id("HostilePeerFailsCleanly", aut), {.max_success = 1, .shrink = false},
                         [&] {
                           for (const Misbehaviour& m : misbehaviours()) run_case(aut, m);
                         });
}

}  // namespace lmcache::conformance_internal::adapter_properties
