// ProcessorConformance.InlineMatchesSubmitted: the inline entry points (serialize_inline() /
// deserialize_inline(), serde/serde_processor.h) against submitted tasks of the same pairs. The
// serde wrapper runs a task's steps inline when that is cheaper than two thread hand-offs
// (docs/wrapper.md), so in a deployment the inline path carries the data as often as the
// submitted one: pairs under another pair's key, destinations left unnarrowed, or a task that
// draws an id and signals an fd nobody waits on there are as wrong as on the submitted path.
//
// Each case over a fresh processor: 1-4 pairs of one layout under keys over the whole key domain
// (several differing in one field), a pair now and then given a destination too small for its
// frame. Serialized inline and submitted into temps that start as different junk: the same
// outcome, the same narrowed size and (unless randomized) the same bytes, pair by pair. The
// inline frames are read back inline, in reverse order, each under its own key. Neither inline
// call may signal an fd. NotSupported when the processor runs no task inline (both calls return
// nullopt, which the contract allows).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/processor_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// Fails the case when an inline call signalled `d`'s fd (an inline task signals no fd).
void require_no_signal(SerdeProcessor& p, Dir d, const std::string& what) {
  const std::uint64_t n = collect_notifies(fd_of(p, d), 0, 0, std::chrono::milliseconds(0));
  require(n == 0, what + " signalled the " + dir_name(d) + " fd " + std::to_string(n) +
                      " time(s): an inline task signals no fd");
}

}  // namespace

Verdict InlineMatchesSubmitted(const ProcessorUnderTest& put) {
  std::size_t inline_runs = 0;
  Verdict v = run_rc_property(
      rc_id("InlineMatchesSubmitted", put), {.max_success = 6, .shrink = false}, [&] {
        OwnedProcessor p(put);
        const MemoryLayoutDesc layout =
            gen_processor_layout(put, current_profile().max_group_elements / 4);
        const std::size_t n = *uniform_in_range<std::size_t>(1, 5);
        const std::vector<ObjectKey> keys = gen_pair_keys(n);
        const std::uint64_t seed = *gen_seed();
        // Now and then one pair's destination holds a single byte: the task fails, both ways.
        const std::size_t estimate = p->estimate_serialized_size(layout);
        const bool short_pair = estimate > 1 && *uniform_in_range<int>(0, 3) == 0;
        const std::size_t shorted = *uniform_in_range<std::size_t>(0, n);
        std::vector<MemoryObjPtr> inputs, inline_temps, submitted_temps;
        for (std::size_t i = 0; i < n; ++i) {
          inputs.push_back(safe_input(layout, seed + i));
          if (short_pair && i == shorted) {
            inline_temps.push_back(make_object(byte_layout(1)));
            submitted_temps.push_back(make_object(byte_layout(1)));
          } else {
            inline_temps.push_back(junk_temp_for(*p, layout, seed + 100 + i));
            submitted_temps.push_back(junk_temp_for(*p, layout, seed + 200 + i));
          }
        }
        const std::string batch =
            std::to_string(n) + " pair(s) of " + layout.to_string() +
            (short_pair ? ", pair " + std::to_string(shorted) + " into a 1-byte destination"
                        : std::string());
        const std::optional<bool> inline_ok = p->serialize_inline(inputs, inline_temps, keys);
        if (!inline_ok) return;  // not run inline: the caller submits instead
        ++inline_runs;
        require_no_signal(*p, Dir::kSerialize, "serialize_inline() of " + batch);
        const TaskId id = p->submit_serialize(inputs, submitted_temps, keys);
        const bool submitted_ok = take_result(*p, Dir::kSerialize, id, "serialize of " + batch);
        require(*inline_ok == submitted_ok,
                "serialize_inline() of " + batch + " returned " + (*inline_ok ? "true" : "false") +
                    " where a submitted task of the same pairs completed " +
                    (submitted_ok ? "true" : "false"));
        require(submitted_ok || short_pair,
                "a submitted serialize of " + batch + " valid pair(s) completed false");
        if (!submitted_ok) return;
        for (std::size_t i = 0; i < n; ++i) {
          const std::string d = serialized_difference(put, *inline_temps[i], *submitted_temps[i]);
          require(d.empty(), "pair " + std::to_string(i) + " of " + batch + " (key " +
                                 keys[i].to_string() + ") serialized inline differs from the " +
                                 "submitted task's frame: " + d);
        }
        // The inline frames read back inline, in another order, each under its own key.
        std::vector<MemoryObjPtr> frames, outs;
        std::vector<ObjectKey> reversed;
        for (std::size_t k = n; k-- > 0;) {
          frames.push_back(inline_temps[k]);
          outs.push_back(make_object(layout));
          reversed.push_back(keys[k]);
        }
        const std::optional<bool> read_ok = p->deserialize_inline(frames, outs, reversed);
        if (!read_ok) return;
        require_no_signal(*p, Dir::kDeserialize, "deserialize_inline() of " + batch);
        require(*read_ok, "deserialize_inline() of the inline frames of " + batch +
                              ", in reverse order, each under its own key, returned false");
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t i = n - 1 - k;
          const std::string m = decoded_mismatch(*inputs[i], *outs[k]);
          require(m.empty(), "pair " + std::to_string(i) + " of " + batch + " (key " +
                                 keys[i].to_string() + ") read back inline to another value: " + m);
        }
      });
  if (v.status == Status::kPass && inline_runs == 0) {
    return Verdict::not_supported(
        "the processor runs no task inline (serialize_inline() returned nullopt every time)");
  }
  return v;
}

}  // namespace lmcache::conformance_internal::processor_properties
