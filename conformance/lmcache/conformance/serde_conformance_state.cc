// SerdeConformance properties that use one instance for more than one call: threads sharing a
// serializer / deserializer, and sequences of calls over several layouts (state kept between
// calls, such as a cached estimate or a scratch buffer, must never change an answer).
#include <algorithm>
#include <cstring>
#include <latch>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/internal/serde_properties.h"
#include "lmcache/conformance/verify.h"

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

constexpr int kThreads = 4;

// `kThreads` sources of different generated layouts; the total stays within one group's limit
// so that four threads do not multiply the cost of the largest cases.
std::vector<MemoryObjPtr> gen_distinct_sources(const SerdeUnderTest& serde) {
  SizeLimits limits = size_limits_with_chunks();
  limits.max_total_elements = limits.max_group_elements / kThreads + 1;
  limits.max_group_elements = limits.max_total_elements;
  const ValueSpec spec = value_spec_for(serde);
  std::vector<MemoryObjPtr> sources;
  for (int t = 0; t < kThreads; ++t) {
    sources.push_back(make_source(*gen_serde_case(serde.input_dtypes, limits), spec));
  }
  return sources;
}

// One step of a sequence on one serializer / deserializer pair. (Generators capture by value:
// RapidCheck regenerates values to print a counterexample after the property has returned.)
struct SerdeStep {
  enum class Kind { kEstimate, kSerialize, kRoundTrip } kind = Kind::kEstimate;
  std::size_t layout = 0;  // index into the sequence's layouts
  std::uint64_t seed = 0;  // data seed of the source
  std::size_t key = 0;     // index into the sequence's keys
};

std::ostream& operator<<(std::ostream& os, const SerdeStep& s) {
  const char* what = s.kind == SerdeStep::Kind::kEstimate    ? "estimate"
                     : s.kind == SerdeStep::Kind::kSerialize ? "serialize"
                                                             : "round trip";
  return os << what << "(layout " << s.layout << ", seed " << s.seed << ", key " << s.key << ")";
}

// One key per thread: often the same chunk under other tenants (salts that share prefixes), as a
// serde shared by a processor's workers sees them.
std::vector<ObjectKey> gen_thread_keys(std::size_t n) {
  std::vector<ObjectKey> keys;
  const ObjectKey base = *gen_object_key();
  for (std::size_t t = 0; t < n; ++t) {
    keys.push_back(*uniform_in_range(0, 2) == 0 ? *gen_key_varied_in(base, KeyField::kCacheSalt)
                                                : *gen_object_key());
  }
  return keys;
}

void showValue(const SerdeStep& s, std::ostream& os) { os << s; }

// A layout close to `of`: the same shapes with other dtypes, or the same element count in
// another split over the groups.
rc::Gen<MemoryLayoutDesc> gen_relative(MemoryLayoutDesc of, std::vector<DType> dtypes) {
  return rc::gen::exec([of = std::move(of), dtypes = std::move(dtypes)] {
    std::vector<Shape> shapes = of.shapes();
    std::vector<DType> types = of.dtypes();
    if (shapes.empty()) return of;
    if (*uniform_in_range(0, 2) == 0) {
      for (auto& t : types) t = *rc::gen::elementOf(dtypes);
    } else {
      const std::size_t total = of.total_elements();
      const std::size_t first = *uniform_in_range<std::size_t>(0, total + 1);
      shapes.assign(
          {{static_cast<std::int64_t>(first)}, {static_cast<std::int64_t>(total - first)}});
      types.resize(2, types.front());
    }
    return MemoryLayoutDesc(std::move(shapes), std::move(types));
  });
}

// One round trip of `src` under `key`: the decoded layout bytes, or what went wrong.
std::string round_trip(Serializer& ser, Deserializer& deser, const MemoryObj& src,
                       const ObjectKey& key, std::vector<std::byte>* decoded) {
  std::size_t est = 0;
  SerializeOutcome frame = serialize_at_estimate(ser, src, &est, key);
  if (!frame.error.empty()) return frame.error;
  GuardedObject bytes = serialized_buffer(frame.bytes, est);
  MemoryObjPtr out = make_object(src.layout());
  if (auto ex = throws([&] { deser.deserialize(*bytes, *out, key); })) {
    return "deserialize() threw on serialize()'s own frame: " + *ex;
  }
  const auto all = out->physical_bytes().first(src.layout().total_bytes());
  decoded->assign(all.begin(), all.end());
  return {};
}

// Threads sharing one serializer and one deserializer, each call under a cache_salt no call used
// before: whatever an implementation keeps per salt (a derived key) is filled by every thread at
// once while the others read it. Each round trip must decode as a single thread's does.
std::string salts_filled_at_once(const SerdeUnderTest& serde) {
  constexpr std::size_t kSaltThreads = 8;
  constexpr std::size_t kSaltsEach = 24;
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({64}, serde.input_dtypes.front());
  MemoryObjPtr src = make_object(layout);
  fill_values(*src, value_spec_for(serde), *gen_seed());
  const ObjectKey base = *gen_object_key();
  const std::string prefix = "salt" + std::to_string(*gen_seed() % 1000000) + "-";
  auto key_of = [&](std::size_t t, std::size_t r) {
    return ObjectKey(base.chunk_hash(), base.model_name(), base.kv_rank(), base.object_group_id(),
                     prefix + std::to_string(t) + "-" + std::to_string(r));
  };
  std::vector<std::vector<std::byte>> want(kSaltThreads * kSaltsEach);
  {
    SerializerPtr ser = serde.make_serializer();
    DeserializerPtr deser = serde.make_deserializer();
    for (std::size_t i = 0; i < want.size(); ++i) {
      const ObjectKey key = key_of(i / kSaltsEach, i % kSaltsEach);
      if (std::string e = round_trip(*ser, *deser, *src, key, &want[i]); !e.empty()) {
        return "one thread alone: " + e + where(layout, key);
      }
    }
  }
  SerializerPtr ser = serde.make_serializer();
  DeserializerPtr deser = serde.make_deserializer();
  std::vector<std::string> errors(kSaltThreads);
  std::latch start(static_cast<std::ptrdiff_t>(kSaltThreads));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kSaltThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (std::size_t r = 0; r < kSaltsEach && errors[t].empty(); ++r) {
        const ObjectKey key = key_of(t, r);
        std::vector<std::byte> got;
        try {
          errors[t] = round_trip(*ser, *deser, *src, key, &got);
        } catch (...) {
          errors[t] = "threw: " + what_of(std::current_exception());
        }
        if (errors[t].empty() && got != want[t * kSaltsEach + r]) {
          errors[t] = "decoded differently from one thread alone: " +
                      first_byte_difference(want[t * kSaltsEach + r], got);
        }
        if (!errors[t].empty()) errors[t] += where(layout, key);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < kSaltThreads; ++t) {
    if (!errors[t].empty()) {
      return "thread " + std::to_string(t) + " of " + std::to_string(kSaltThreads) +
             " sharing one instance, each call under a cache_salt not used before: " + errors[t] +
             " (state kept per salt, such as a derived key, not safe across threads?)";
    }
  }
  return {};
}

}  // namespace

Verdict DeterministicAcrossThreads(const SerdeUnderTest& serde) {
  if (serde.integrity.randomized) {
    return Verdict::not_supported(
        "the serde declares integrity.randomized: its bytes differ per call");
  }
  // Fewer cases: each starts four threads.
  return run_rc_property(rc_id("DeterministicAcrossThreads", serde), {.max_success = 15}, [&] {
    std::vector<MemoryObjPtr> sources = gen_distinct_sources(serde);
    const std::vector<ObjectKey> keys = gen_thread_keys(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      RC_LOG() << sources[i]->layout().to_string() << " under " << keys[i].to_string() << "\n";
    }
    require_ok(verify_concurrent_serialize(serde, sources, 2, keys));
  });
}

Verdict ConcurrentRoundTrips(const SerdeUnderTest& serde) {
  Verdict v = run_rc_property(rc_id("ConcurrentRoundTrips", serde), {.max_success = 15}, [&] {
    std::vector<MemoryObjPtr> sources = gen_distinct_sources(serde);
    const std::vector<ObjectKey> keys = gen_thread_keys(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      RC_LOG() << sources[i]->layout().to_string() << " under " << keys[i].to_string() << "\n";
    }
    require_ok(verify_concurrent_round_trips(serde, sources, 2, keys));
  });
  if (v.status != Status::kPass) return v;
  // A few cases, at every depth: each starts eight threads and 192 calls.
  return run_rc_property(rc_id("ConcurrentRoundTrips", serde),
                         {.max_success = 3, .shrink = false, .scale_with_depth = false}, [&] {
                           const std::string salts = salts_filled_at_once(serde);
                           require(salts.empty(), salts);
                         });
}

Verdict OneInstanceManyLayouts(const SerdeUnderTest& serde) {
  const bool randomized = serde.integrity.randomized;
  const ValueSpec spec = value_spec_for(serde);
  return run_rc_property(rc_id("OneInstanceManyLayouts", serde), {.max_success = 25}, [&] {
    // Two to four layouts of different sizes; the sequence goes back and forth between them.
    SizeLimits limits = size_limits();
    limits.max_group_elements = std::min<std::size_t>(limits.max_group_elements, 1u << 16);
    limits.max_total_elements = 2 * limits.max_group_elements;
    // Later layouts are often near relatives of earlier ones (the same shapes with other
    // dtypes, the same element count split differently), the collisions of a cache keyed on
    // less than the whole layout.
    const auto n_layouts = *uniform_in_range<std::size_t>(2, 5);
    std::vector<MemoryLayoutDesc> layouts;
    for (std::size_t i = 0; i < n_layouts; ++i) {
      if (i > 0 && *uniform_in_range(0, 2) == 0) {
        layouts.push_back(
            *gen_relative(layouts[*uniform_in_range<std::size_t>(0, i)], serde.input_dtypes));
      } else {
        layouts.push_back(*gen_layout(serde.input_dtypes, limits));
      }
    }
    // One to five keys; later ones often differ from an earlier one in one field (a salt with
    // a shared prefix, the same hash under another model): per-key state (a derived key, a
    // fingerprint) kept from an earlier call must never answer for another key.
    const auto n_keys = *uniform_in_range<std::size_t>(1, 6);
    std::vector<ObjectKey> keys;
    for (std::size_t i = 0; i < n_keys; ++i) {
      if (i > 0 && *uniform_in_range(0, 3) != 0) {
        keys.push_back(
            *gen_key_varied_in(keys[*uniform_in_range<std::size_t>(0, i)],
                               *rc::gen::elementOf(std::vector<KeyField>(
                                   std::begin(kAllKeyFields), std::end(kAllKeyFields)))));
      } else {
        keys.push_back(*gen_object_key());
      }
    }
    const auto steps =
        *rc::gen::container<std::vector<SerdeStep>>(rc::gen::exec([n_layouts, n_keys] {
          SerdeStep s;
          s.kind = *rc::gen::element(SerdeStep::Kind::kEstimate, SerdeStep::Kind::kSerialize,
                                     SerdeStep::Kind::kRoundTrip);
          s.layout = *uniform_in_range<std::size_t>(0, n_layouts);
          s.seed = *uniform_in_range<std::uint64_t>(0, 4);
          s.key = *uniform_in_range<std::size_t>(0, n_keys);
          return s;
        }));
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      RC_LOG() << "layout " << i << ": " << layouts[i].to_string() << "\n";
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      RC_LOG() << "key " << i << ": " << keys[i].to_string() << "\n";
    }
    SerializerPtr ser = serde.make_serializer();
    DeserializerPtr deser = serde.make_deserializer();
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const SerdeStep& step = steps[i];
      const MemoryLayoutDesc& layout = layouts[step.layout];
      const ObjectKey& key = keys[step.key];
      const std::string at = "step " + std::to_string(i) + " (" + [&] {
        std::ostringstream os;
        os << step;
        return os.str();
      }() + ") of one instance's sequence";
      // What fresh instances answer.
      SerializerPtr fresh = serde.make_serializer();
      std::string error;
      std::optional<std::size_t> want_est = estimate(*fresh, layout, &error);
      require(want_est.has_value(), at + ": a fresh instance's " + error);
      std::optional<std::size_t> got_est = estimate(*ser, layout, &error);
      require(got_est.has_value(), at + ": " + error + where(layout, key));
      require(*got_est == *want_est,
              at + ": estimate_serialized_size() = " + std::to_string(*got_est) +
                  " where a fresh instance says " + std::to_string(*want_est) +
                  " (an estimate cached from an earlier layout?)" + where(layout, key));
      if (step.kind == SerdeStep::Kind::kEstimate) continue;
      SerdeCase c{layout, step.seed, 0, key};
      MemoryObjPtr src = make_source(c, spec);
      SerializeOutcome want = run_serialize(*fresh, *src, *want_est, 7, key);
      require(want.error.empty(), at + ": a fresh instance: " + want.error + where(layout, key));
      // Sized from this instance's own estimate, as the wrapper sizes a temp.
      SerializeOutcome got = run_serialize(*ser, *src, *got_est, 40 + i, key);
      require(got.error.empty(), at + ": " + got.error + where(layout, key));
      // A randomized serde's bytes differ per call; its count does not, and its frames are
      // held to what fresh instances decode below.
      require(randomized ? got.count == want.count : got.bytes == want.bytes,
              at + ": serialize() gave " + std::to_string(got.count) + " bytes where a fresh " +
                  "instance gives " + std::to_string(want.count) + "; " +
                  first_byte_difference(want.bytes, got.bytes) + where(layout, key));
      if (step.kind != SerdeStep::Kind::kRoundTrip) continue;
      // This instance's frame through a fresh deserializer (the reference decode), and, for a
      // randomized serde, the fresh instance's frame through this deserializer as well.
      GuardedObject bytes = serialized_buffer(got.bytes, *got_est + junk_slack(layout));
      MemoryObjPtr want_out = make_object(layout);
      DeserializerPtr fresh_deser = serde.make_deserializer();
      if (auto ex = throws([&] { fresh_deser->deserialize(*bytes, *want_out, key); })) {
        fail_case(at + ": a fresh deserializer threw on this instance's serialize() output: " +
                  *ex + where(layout, key));
      }
      const std::size_t n = layout.total_bytes();
      std::vector<const GuardedObject*> frames = {&bytes};
      GuardedObject fresh_bytes = serialized_buffer(want.bytes, *want_est + junk_slack(layout));
      if (randomized) frames.push_back(&fresh_bytes);
      for (const GuardedObject* frame : frames) {
        GuardedObject got_out(layout, layout.total_bytes(), 50 + i);
        if (auto ex = throws([&] { deser->deserialize(**frame, *got_out, key); })) {
          fail_case(at + ": deserialize() threw: " + *ex + where(layout, key));
        }
        require(got_out.check_guards().empty(),
                at + ": deserialize() wrote outside its destination: " + got_out.check_guards());
        require(same_bytes(got_out->data(), want_out->data(), n),
                at +
                    ": deserialize() decoded differently from a fresh instance (a decode plan, "
                    "scratch buffer or derived key kept from an earlier layout or key?)" +
                    where(layout, key));
      }
    }
  });
}

}  // namespace lmcache::conformance_internal::serde_properties
