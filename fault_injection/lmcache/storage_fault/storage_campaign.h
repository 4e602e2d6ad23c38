// File: lmcache/storage_fault/storage_campaign.h
//
// The real storage of a fault campaign, and its real faults: what `lmcache-fault-campaign
// --inner '{"type":"resp"}' --storage-faults all` runs over. For an inner adapter of type
// "resp" the campaign starts its own redis-server (storage_testing::RedisServer: 127.0.0.1, a
// free port, no persistence, a temporary directory) unless the config names a port; for "fs"
// it makes a temporary directory unless the config names a base_path. Faults need storage the
// campaign owns: a fault kind over a server or directory the user gave is refused, so a
// campaign never kills, fills or damages what it did not create.
//
// What each kind does, and what it tells the campaign (fault_injection/README.md lists what the
// stack must do):
//   redis_kill         SIGKILL while the wave is in flight; the next wave runs against no
//                      server; then restarted empty: every stored key may be lost.
//   redis_pause        SIGSTOP while the wave is in flight, SIGCONT 20-220 ms later: the wave's
//                      tasks wait, then complete.
//   redis_client_kill  CLIENT KILL of every client connection while the wave is in flight.
//   redis_maxmemory    maxmemory 1 byte (noeviction) for this wave and the next: SETs are
//                      refused with OOM; nothing stored is lost.
//   fs_full            RLIMIT_FSIZE of 1 byte for this wave and the next: every write fails
//                      with EFBIG, as on a full disk.
//   fs_unwritable      base_path mode 0555 for this wave and the next (skipped, saying why,
//                      where permissions mean nothing: root).
//   fs_truncate        one stored object's file cut to half: it may only miss.
//   fs_flip            one byte of one stored object's file flipped: with checksum crc32 it may
//                      only miss; without, it may also load wrong bytes (the campaign's data
//                      check must see them).
//   fs_delete          one stored object's file deleted: it may only miss.
//
// Test support like storage_testing: never installed. Namespace lmcache::fault.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/fault/campaign.h"
#include "lmcache/storage_fault/storage_faults.h"

namespace lmcache::fault {

// parse_storage_fault_kinds()
//
// "none" (or empty): no kind; "all": every kind of `adapter_type` ("resp" or "fs"); otherwise
// a comma list of kind names. Throws std::invalid_argument naming an unknown kind, a kind of
// another adapter type, or "all" for an adapter type with no storage faults.
std::vector<StorageFaultKind> parse_storage_fault_kinds(std::string_view list,
                                                        std::string_view adapter_type);

// StorageCampaign
//
// `inner`: the config to run the campaign over (the requested one, with host/port or
// base_path filled in when the campaign made the storage). `faults`: null when no kind was
// asked for. `storage` keeps the server or directory alive: hold it as long as the campaign.
struct StorageCampaign {
  Json inner;
  std::shared_ptr<StorageFaultSource> faults;
  std::shared_ptr<void> storage;
};

// make_storage_campaign()
//
// The storage a campaign over `inner` needs, and the source of `kinds` over it (kinds taking
// turns from a start chosen by `seed`). An inner adapter that is neither resp nor fs is
// returned as it is, with no storage (kinds must then be empty). Throws std::invalid_argument
// for a kind of another adapter type or a kind over storage the campaign did not create, and
// std::runtime_error when redis-server cannot be found or started.
StorageCampaign make_storage_campaign(const Json& inner, const std::vector<StorageFaultKind>& kinds,
                                      std::uint64_t seed);

}  // namespace lmcache::fault
