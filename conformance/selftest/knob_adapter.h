// File: conformance/selftest/knob_adapter.h
//
// The adapter mutants' one implementation: the reference mock adapter under a decorator whose
// knobs each add one bug (mutant_adapters.cc pairs every knob with its property and witness).
#pragma once

#include "lmcache/conformance/descriptors.h"

namespace lmcache::conformance::selftest {

struct AdapterKnobs {
  bool same_fd = false;               // the load fd is the store fd
  bool unknown_id_throws = false;     // query_load_result of an id never issued throws
  bool answer_twice = false;          // lookup results are handed out again
  bool silent_load_fd = false;        // the load fd is never signalled
  bool zero_bytes = false;            // stores report 0 bytes transferred
  bool lookup_all_present = false;    // lookup bitmaps say every key is present
  bool load_ignores_bitmap = false;   // load bitmaps say every key was loaded
  bool lookup_does_not_lock = false;  // hits are unlocked right away
  bool usage_doubled = false;
  bool drops_listeners = false;
  bool delete_is_noop = false;
  bool close_throws_twice = false;
  bool close_leaks_fd = false;
  // Realistic bugs.
  bool bitmap_in_one_byte = false;       // result bitmaps kept in a uint8_t: bits 8+ lost
  bool stores_whole_buffer = false;      // stores physical_size() bytes, not size()
  bool load_leaves_size_unset = false;   // a load leaves the destination's size() at its capacity
  bool key_ignores_kv_rank = false;      // the storage key is built without kv_rank
  bool racy_store_ids = false;           // own store ids from a read-then-write counter
  bool pop_hands_out_twice = false;      // pop copies the results, then erases them in a 2nd step
  bool racy_usage_counter = false;       // own usage counter, updated read-then-write
  bool unlock_dedups_keys = false;       // a key twice in one unlock releases one lock
  bool usage_counted_at_submit = false;  // "is it new?" decided at submit: two stores in flight
                                         // count a key twice
  bool keeps_caller_objects = false;     // every stored / loaded object kept in a history
  bool thread_per_load = false;          // a helper thread per load, joined only by close()
  bool flaky_every_40th_load = false;    // one load in 40 (process-wide) loses its first hit
  // Lent store buffers (the mock lends; these break it).
  bool lends_first_buffer_again = false;  // every later lend hands out the first buffer again
  bool lent_bytes_only_grow = false;      // lent_bytes_outstanding() counts lends, never returns
  bool lent_keys_visible = false;         // lookups report keys present as soon as they are lent
  bool views_recycled_on_delete = false;  // a delete zeroes the memory of views still held
  // Issue 25's classes.
  bool truncates_past_64k = false;      // a fixed 64 KiB slot per object: the rest is dropped
  bool empty_values_missing = false;    // a 0-byte value reads as "no such key" on lookup
  bool drops_results_at_close = false;  // untaken store and load results dropped by close()
  bool load_ids_16_bit = false;         // load ids kept in 16 bits
  // Blind-trial classes: bugs vendors wrote without seeing the kit.
  bool load_ids_own_counter = false;        // loads numbered 0, 1, ... apart from stores
  bool load_result_after_notify = false;    // a load's result shows up only after its notify
  bool unlock_releases_every_lock = false;  // an unlock of a key drops all of its locks
  // Hostile peers (HostilePeerFailsCleanly): stores whose storage failed.
  bool store_failure_reported_done = false;   // a failed store is handed out as done, its bytes
                                              // counted (a SET whose reply is never read)
  bool failed_store_never_completes = false;  // a failed store is never handed out (the worker
                                              // that met the error exits with its task)
  // Damaged storage (StoredDamageContained): a load of a key this adapter stored (and did not
  // delete) is reported loaded whatever the store gave back, as a reader that pads a short file
  // with what the buffer held does.
  bool damaged_object_loads = false;
  // Capacity (CapacityHonoured): the adapter admits stores against a counter of its own that a
  // delete never lowers, while its usage follows the store: once full, full for good.
  bool capacity_kept_after_delete = false;
  // Configs (ConfigTyposRejected): the adapter's type reads the keys it knows and ignores the
  // rest, as `config.get("num_workers", 8)` does.
  bool config_ignores_unknown_keys = false;
  // Configs (ConfigValueKindsChecked): the adapter's type refuses unknown keys, but reads its
  // flag as `v.is_boolean() && v.get<bool>()`: anything but a boolean is a silent false.
  bool config_flag_kind_unchecked = false;
  // Configs (ConfigTyposRejected, in a "serde" object's "stages"): the adapter's config carries a
  // composite serde of the self-test's that refuses unknown keys of its own but drops those of
  // each stage before building it, as a reader that validates one level only does.
  bool config_stage_keys_unchecked = false;
  // Not a bug: a pool that reaches its bound late (a connection a worker opens on its first
  // task): one eventfd opened by the store with this 1-based number, kept until close().
  std::size_t late_pool_fd_at_store = 0;
};

// make_knob_adapter()
//
// "decorated_mock": a fresh MockL2Adapter (1 GiB, lending load views) under the knobs `k`
// on every make() (of the capacity asked on every make_with_capacity()), the reference "resp"
// adapter under them on every make_over_resp_peer(), and the reference "fs" adapter (crc32
// trailer, a directory of the process's) under them on every make_damageable();
// its config is the registry's "mock" (config_ignores_unknown_keys, config_flag_kind_unchecked:
// a type of the self-test's with that bug; config_stage_keys_unchecked: the mock with a serde
// type of the self-test's with that bug). With no knob set, a correct adapter.
AdapterUnderTest make_knob_adapter(AdapterKnobs k);

}  // namespace lmcache::conformance::selftest
