// ProcessorConformance.StatefulModel: one processor driven through a generated sequence of
// serializes and deserializes of several layouts (some with a failing pair), estimates and
// result queries in any order, then close(). A model of the submitted tasks says what each
// query must answer; state the processor keeps between tasks (a sticky error flag, a scratch
// buffer sized for the first layout, an estimate cache) shows up as a wrong answer.
#include <algorithm>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/internal/processor_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

struct ProcStep {
  enum class Kind { kSerialize, kDeserialize, kTakeOne, kTakeAll, kEstimate } kind;
  std::size_t layout = 0;
  std::size_t pairs = 1;
  long fail_at = -1;     // the failing pair, or -1
  std::size_t pick = 0;  // which pending / serialized task, modulo their count
};

std::ostream& operator<<(std::ostream& os, const ProcStep& s) {
  switch (s.kind) {
    case ProcStep::Kind::kSerialize:
      os << "serialize(layout " << s.layout << ", " << s.pairs << " pairs";
      break;
    case ProcStep::Kind::kDeserialize:
      os << "deserialize(serialized task #" << s.pick << ", layout " << s.layout;
      break;
    case ProcStep::Kind::kTakeOne:
      return os << "take(pending #" << s.pick << ")";
    case ProcStep::Kind::kTakeAll:
      return os << "take all";
    case ProcStep::Kind::kEstimate:
      return os << "estimate(layout " << s.layout << ")";
  }
  if (s.fail_at >= 0) os << ", pair " << s.fail_at << " fails";
  return os << ")";
}

void showValue(const ProcStep& s, std::ostream& os) { os << s; }

struct ModelTask {
  Dir dir;
  TaskId id;
  bool expected;
  std::vector<MemoryObjPtr> inputs;   // the values the task's pairs stand for
  std::vector<MemoryObjPtr> outputs;  // temps (serialize) or decoded objects (deserialize)
  std::string what;
  std::vector<ObjectKey> keys;  // pair i's key
};

}  // namespace

Verdict StatefulModel(const ProcessorUnderTest& put) {
  const DepthProfile& profile = current_profile();
  return run_rc_property(rc_id("StatefulModel", put), {.max_success = 15, .shrink = false}, [&] {
    const auto n_layouts = *uniform_in_range<std::size_t>(2, 4);
    std::vector<MemoryLayoutDesc> layouts;
    for (std::size_t i = 0; i < n_layouts; ++i) {
      layouts.push_back(gen_processor_layout(put, 1u << 15));
    }
    const std::size_t max_pairs = std::max<std::size_t>(1, profile.max_batch / 4);
    const int n_steps = *uniform_in_range(4, profile.max_commands + 1);
    const auto steps = *rc::gen::container<std::vector<ProcStep>>(
        static_cast<std::size_t>(n_steps), rc::gen::exec([n_layouts = layouts.size(), max_pairs] {
          ProcStep s{*rc::gen::weightedElement<ProcStep::Kind>({{4, ProcStep::Kind::kSerialize},
                                                                {3, ProcStep::Kind::kDeserialize},
                                                                {3, ProcStep::Kind::kTakeOne},
                                                                {1, ProcStep::Kind::kTakeAll},
                                                                {1, ProcStep::Kind::kEstimate}})};
          s.layout = *uniform_in_range<std::size_t>(0, n_layouts);
          s.pairs = *gen_batch_size(max_pairs);
          if (*uniform_in_range(0, 4) == 0) {
            s.fail_at = *uniform_in_range<long>(0, static_cast<long>(s.pairs));
          }
          s.pick = *uniform_in_range<std::size_t>(0, 64);
          return s;
        }));
    const bool close_with_pending = *rc::gen::element(false, true);
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      RC_LOG() << "layout " << i << ": " << layouts[i].to_string() << "\n";
    }

    // Keys of the sequence: a pool of domain keys, several differing in one field.
    const std::vector<ObjectKey> key_pool = gen_pair_keys(*uniform_in_range<std::size_t>(1, 9));
    OwnedProcessor p(put);
    std::map<std::size_t, std::size_t> first_estimate;  // layout -> estimate
    std::vector<ModelTask> pending;
    std::vector<ModelTask> serialized;  // taken true: their temps hold their inputs
    std::size_t submitted[2] = {0, 0};
    std::uint64_t seed = 1;

    auto take = [&](std::size_t index, const std::string& when) {
      ModelTask t = std::move(pending[index]);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(index));
      std::optional<bool> r =
          poll_until([&] { return query_of(*p, t.dir, t.id); }, result_timeout());
      require(r.has_value(),
              when + ": the " + t.what + " (task " + std::to_string(t.id) + ") did not complete");
      require(*r == t.expected, when + ": the " + t.what + " (task " + std::to_string(t.id) +
                                    ") completed " + (*r ? "true" : "false") + ", expected " +
                                    (t.expected ? "true" : "false"));
      require(!query_of(*p, t.dir, t.id),
              when + ": task " + std::to_string(t.id) + " answered again after it was taken");
      if (!t.expected) return;
      if (t.dir == Dir::kSerialize) {
        serialized.push_back(std::move(t));
        return;
      }
      for (std::size_t i = 0; i < t.inputs.size(); ++i) {
        std::string m = decoded_mismatch(*t.inputs[i], *t.outputs[i]);
        require(m.empty(), when + ": pair " + std::to_string(i) + " of the " + t.what +
                               " did not decode to its input: " + m);
      }
    };

    for (std::size_t i = 0; i < steps.size(); ++i) {
      const ProcStep& step = steps[i];
      std::ostringstream at_os;
      at_os << "step " << i << " (" << step << ")";
      const std::string at = at_os.str();
      const MemoryLayoutDesc& layout = layouts[step.layout];
      switch (step.kind) {
        case ProcStep::Kind::kEstimate: {
          const std::size_t e = p->estimate_serialized_size(layout);
          auto [it, first] = first_estimate.emplace(step.layout, e);
          require(first || it->second == e, at + ": estimate_serialized_size(" +
                                                layout.to_string() + ") = " + std::to_string(e) +
                                                ", earlier " + std::to_string(it->second) +
                                                " (an estimate must depend on the layout only)");
          break;
        }
        case ProcStep::Kind::kSerialize: {
          ModelTask t{Dir::kSerialize, 0, step.fail_at < 0, {}, {}, "", {}};
          std::vector<MemoryObjPtr> dsts;
          for (std::size_t k = 0; k < step.pairs; ++k) {
            t.inputs.push_back(safe_input(layout, seed++));
            const bool fails = static_cast<long>(k) == step.fail_at;
            t.outputs.push_back(fails ? make_object(byte_layout(0)) : temp_for(*p, layout));
            t.keys.push_back(key_pool[(step.pick + k) % key_pool.size()]);
          }
          std::ostringstream os;
          os << step;
          t.what = os.str();
          t.id = p->submit_serialize(t.inputs, t.outputs, t.keys);
          ++submitted[0];
          pending.push_back(std::move(t));
          break;
        }
        case ProcStep::Kind::kDeserialize: {
          if (serialized.empty()) break;
          const ModelTask& from = serialized[step.pick % serialized.size()];
          // The serialized pairs in another order (rotated by the step's pick), each with the
          // key it was serialized under.
          ModelTask t{Dir::kDeserialize, 0, step.fail_at < 0, {}, {}, "", {}};
          std::vector<MemoryObjPtr> srcs;
          const std::size_t n = from.outputs.size();
          for (std::size_t k = 0; k < n; ++k) {
            const std::size_t j = (k + step.pick) % n;
            const bool fails = static_cast<long>(k) == step.fail_at;
            srcs.push_back(fails ? make_object(byte_layout(0)) : from.outputs[j]);
            t.inputs.push_back(from.inputs[j]);
            t.keys.push_back(from.keys[j]);
            t.outputs.push_back(make_object(from.inputs[j]->layout()));
          }
          if (step.fail_at >= static_cast<long>(srcs.size())) t.expected = true;
          std::ostringstream os;
          os << "deserialize of " << srcs.size() << " pair(s) "
             << from.inputs[0]->layout().to_string() << (t.expected ? "" : " with a failing pair");
          t.what = os.str();
          t.id = p->submit_deserialize(srcs, t.outputs, t.keys);
          ++submitted[1];
          pending.push_back(std::move(t));
          break;
        }
        case ProcStep::Kind::kTakeOne:
          if (!pending.empty()) take(step.pick % pending.size(), at);
          break;
        case ProcStep::Kind::kTakeAll:
          while (!pending.empty()) take(0, at);
          break;
      }
    }
    if (!close_with_pending) {
      while (!pending.empty()) take(0, "the end of the sequence");
      // Every task of the sequence, true or false, came with exactly one notify.
      for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
        const std::size_t n = submitted[d == Dir::kSerialize ? 0 : 1];
        const std::uint64_t got = collect_notifies(fd_of(*p, d), n);
        require(got == n, std::to_string(n) + " " + dir_name(d) + " tasks of the sequence gave " +
                              std::to_string(got) + " notifies (exactly one per task)");
      }
    }
    // close() completes what is still queued, and the results stay queryable after it.
    MemoryObjPtr late_src = safe_input(layouts[0], 1);
    MemoryObjPtr late_temp = temp_for(*p, layouts[0]);
    p->close();
    while (!pending.empty()) take(0, "after close()");
    try {
      p->submit_serialize({late_src}, {late_temp}, probe_keys(1));
      fail_case("submit_serialize() after close() (at the end of a sequence) did not throw");
    } catch (const std::logic_error&) {
    }
  });
}

}  // namespace lmcache::conformance_internal::processor_properties
