// File: conformance/selftest/knob_queue_processor.h
//
// The processor mutants' one implementation: a small SerdeProcessor (one or two worker threads, a
// queue, two completion maps and two eventfds) over the fp8 pair, or the checksum pair, whose
// knobs each add one bug (mutant_processors.cc pairs every knob with its property and witness).
#pragma once

#include "lmcache/serde/serde_processor.h"

namespace lmcache::conformance::selftest {

struct ProcessorKnobs {
  int workers = 1;
  bool same_fd = false;  // one eventfd for both directions
  bool skip_every_second_notify = false;
  bool answer_twice = false;      // queries do not remove the result
  bool throw_on_unknown = false;  // a query of an id never issued throws
  bool no_notify_on_failure = false;
  bool racy_ids = false;  // read-sleep-write id counter
  bool leak_fd_on_close = false;
  bool leak_thread_on_close = false;
  bool drop_queued_on_close = false;
  bool submit_after_close_ok = false;
  bool accept_mismatched = false;
  bool zero_estimate = false;
  // Realistic bugs.
  bool decode_all_into_first = false;  // every pair of a deserialize decoded into dsts[0]
  bool result_of_last_pair = false;    // a task reports how its last pair went
  bool failures_answered_twice = false;
  bool close_clears_results = false;
  bool fd_leak_every_64_tasks = false;  // an eventfd per 64 tasks, closed only by close()
  bool keeps_task_buffers = false;      // every task's buffers kept until close()
  bool sticky_failure = false;          // the task after a failed one fails too
  bool shared_pair_cursor = false;      // the running task's pair index is shared by workers
  bool no_narrowing = false;            // serialized temps keep their capacity as size()
  bool at_most_16_pairs = false;        // pairs past the 16th are skipped
  bool flaky_every_97th_task = false;   // one task in 97 (process-wide) reports false
  // Over the checksum serde (key-binding) instead of fp8: what the key mutants need.
  bool over_checksum = false;
  bool key_of_first_pair = false;       // every pair of a task gets keys[0]
  bool ignores_keys = false;            // every pair gets one default key, in both directions
  bool temps_rounded_up = false;        // temps narrowed to the count rounded up to 8 bytes
  bool ids_16_bit = false;              // task ids kept in 16 bits
  bool key_count_unchecked = false;     // only srcs and dsts are compared; keys may be any length
  bool rounds_toward_zero = false;      // fp8 codes rounded toward zero, not to nearest even
  bool ids_per_direction = false;       // serialize and deserialize each count from 0
  bool pads_past_count = false;         // zeroes dst up to an 8-byte boundary past the count
  bool empty_batch_dropped = false;     // an empty batch gets an id and never completes
  bool frames_first_pair_size = false;  // every pair serialized as if of the first's layout
  bool shared_outcome = false;  // a task's outcome kept in one member every worker's task sets
  // Inline tasks (serialize_inline / deserialize_inline): run on the caller's thread, as the
  // reference processor runs them. Not a bug.
  bool runs_inline = true;
  bool inline_submits_and_waits =
      false;  // inline = submit, then wait: an id drawn, an fd signalled
  bool inline_key_of_first_pair = false;  // every pair of an inline task gets keys[0]
};

// make_knob_queue_processor()
//
// A fresh processor with the knobs `k` (with no knob set, a correct processor).
SerdeProcessorPtr make_knob_queue_processor(ProcessorKnobs k);

}  // namespace lmcache::conformance::selftest
