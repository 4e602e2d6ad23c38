// File: lmcache/wrapper/wrapper_options.h
//
// SerdeWrapperOptions: how a SerdeL2AdapterWrapper runs its serde steps and where its metrics
// go (docs/wrapper.md), and the adapter config's "serde_wrapper" object that sets them.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lmcache/core/config.h"

namespace prometheus {
class Registry;
}

namespace lmcache {

struct SerdeWrapperOptions {
  // Upper bound of one poll; only a safety net, since every event wakes the loop.
  std::chrono::milliseconds poll_timeout{500};
  // Inline serde steps (fewer thread hand-offs; the processor must implement
  // SerdeProcessor::serialize_inline / deserialize_inline, else the step is submitted as usual).
  // A store of at most inline_serialize_max_bytes bytes of objects is serialized on the
  // submitting thread, so submit_store_task() takes the serialize's time; a load whose loaded
  // serialized bytes are at most inline_deserialize_max_bytes is deserialized on the thread
  // that takes the inner's result (the wrapper's loop thread, or the submitter's with
  // finish_on_submit) instead of a serde worker. 0: never; std::nullopt (the default):
  // adaptive, weighed against the machine's hand-off cost (lmcache/wrapper/inline_policy.h).
  std::optional<std::size_t> inline_serialize_max_bytes;
  std::optional<std::size_t> inline_deserialize_max_bytes;
  // The hand-off cost the adaptive thresholds weigh a step against; std::nullopt (the
  // default): machine_handoff_cost() (lmcache/core/handoff_probe.h), measured once per process
  // by the first wrapper with an adaptive threshold.
  std::optional<std::chrono::nanoseconds> handoff_cost;
  // Finish on the submitting thread what is already done (on by default): right after a submit
  // has reached the inner adapter, submit_*_task() drains the inner's completed stores (store)
  // or loads (load) itself (after a drain the loop is running, if any) and carries them on as
  // the loop would (a load's deserialize inline within its threshold). With an inner that
  // completes idle tasks before its submit returns (the mock's run_when_idle) a task then
  // finishes before its submit returns: no wake-up of the loop thread on its path. Submit then
  // also takes the inner's and the serde's time, and may wait for the loop's current drain;
  // false leaves every drain to the loop.
  bool finish_on_submit = true;
  // Where the metrics go (a fresh registry when null) and labels added to every series.
  std::shared_ptr<prometheus::Registry> metrics_registry;
  std::map<std::string, std::string> metrics_labels;
};

// wrapper_options_from_json()
//
// `base` with what `config` sets: {"inline_serialize_max_bytes": N | "auto",
// "inline_deserialize_max_bytes": N | "auto", "handoff_cost_us": x | "measure",
// "finish_on_submit": bool, "poll_timeout_ms": N}, every key optional. Bytes are integers in
// [0, 2^40], handoff_cost_us a number in [0, 1e6], poll_timeout_ms an integer in [1, 60000].
// Throws std::invalid_argument naming the key for a wrong type, a value out of range, or an
// unknown key; for a `config` that is not an object.
SerdeWrapperOptions wrapper_options_from_json(const Json& config, SerdeWrapperOptions base = {});

}  // namespace lmcache
