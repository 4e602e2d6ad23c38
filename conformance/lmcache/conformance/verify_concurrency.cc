// The concurrency checks of verify.h: instances shared by threads that work on distinct inputs.
#include <cstring>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/verify.h"

namespace lmcache::conformance {

using namespace conformance_internal;  // the serde check building blocks

namespace {

// What fresh instances give for one input on one thread.
struct Expected {
  std::size_t estimate = 0;
  SerializeOutcome serialized;
  std::vector<std::byte> decoded;  // the deserialized layout bytes
  std::string error;
};

Expected single_threaded(const SerdeUnderTest& serde, const MemoryObj& src, bool decode,
                         const ObjectKey& key) {
  Expected e;
  SerializerPtr s = serde.make_serializer();
  e.serialized = serialize_at_estimate(*s, src, &e.estimate, key);
  if (!e.serialized.error.empty()) {
    e.error = e.serialized.error;
    return e;
  }
  if (!decode) return e;
  GuardedObject bytes = serialized_buffer(e.serialized.bytes, e.estimate);
  MemoryObjPtr out = make_object(src.layout());
  DeserializerPtr d = serde.make_deserializer();
  if (auto ex = throws([&] { d->deserialize(*bytes, *out, key); })) {
    e.error = "deserialize() threw on serialize()'s own output: " + *ex;
    return e;
  }
  auto all = out->physical_bytes().first(src.layout().total_bytes());
  e.decoded.assign(all.begin(), all.end());
  return e;
}

// Runs `body(t, round)` on one thread per input, all released at once; returns the first
// error a body reported (bodies return "" when fine).
template <class Body>
std::string run_threads(std::size_t threads, int rounds, Body body) {
  std::vector<std::string> errors(threads);
  std::latch start(static_cast<std::ptrdiff_t>(threads));
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();  // maximise overlap
      for (int r = 0; r < rounds && errors[t].empty(); ++r) {
        try {
          errors[t] = body(t, r);
        } catch (...) {
          errors[t] = "threw: " + what_of(std::current_exception());
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (!e.empty()) return e;
  }
  return {};
}

// keys[i], or probe_key(i) past the end of `keys`.
std::vector<ObjectKey> keys_for(std::size_t n, std::span<const ObjectKey> keys) {
  std::vector<ObjectKey> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(i < keys.size() ? keys[i] : probe_key(i));
  return out;
}

}  // namespace

AssertionResult verify_concurrent_serialize(const SerdeUnderTest& serde,
                                            std::span<const MemoryObjPtr> inputs, int rounds,
                                            std::span<const ObjectKey> key_list) {
  const std::vector<ObjectKey> keys = keys_for(inputs.size(), key_list);
  std::vector<Expected> expected;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    expected.push_back(single_threaded(serde, *inputs[i], false, keys[i]));
    if (!expected.back().error.empty()) {
      return AssertionFailure() << expected.back().error << where(inputs[i]->layout(), keys[i]);
    }
  }
  SerializerPtr shared = serde.make_serializer();
  std::string error = run_threads(inputs.size(), rounds, [&](std::size_t t, int r) {
    const Expected& want = expected[t];
    SerializeOutcome got = run_serialize(*shared, *inputs[t], want.estimate,
                                         100 + 7 * t + static_cast<std::uint64_t>(r), keys[t]);
    if (!got.error.empty()) return "thread " + std::to_string(t) + ": " + got.error;
    if (got.count != want.serialized.count || got.bytes != want.serialized.bytes) {
      return "serialize() on thread " + std::to_string(t) + " of " + std::to_string(inputs.size()) +
             " sharing one instance gave " + std::to_string(got.count) +
             " bytes where one thread alone gets " + std::to_string(want.serialized.count) + "; " +
             first_byte_difference(want.serialized.bytes, got.bytes) +
             " (state shared between calls?)" + where(inputs[t]->layout(), keys[t]);
    }
    return std::string();
  });
  if (!error.empty()) return AssertionFailure() << error;
  return AssertionSuccess();
}

AssertionResult verify_concurrent_round_trips(const SerdeUnderTest& serde,
                                              std::span<const MemoryObjPtr> inputs, int rounds,
                                              std::span<const ObjectKey> key_list) {
  const std::vector<ObjectKey> keys = keys_for(inputs.size(), key_list);
  std::vector<Expected> expected;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    expected.push_back(single_threaded(serde, *inputs[i], true, keys[i]));
    if (!expected.back().error.empty()) {
      return AssertionFailure() << expected.back().error << where(inputs[i]->layout(), keys[i]);
    }
  }
  SerializerPtr ser = serde.make_serializer();
  DeserializerPtr deser = serde.make_deserializer();
  std::string error = run_threads(inputs.size(), rounds, [&](std::size_t t, int r) {
    const Expected& want = expected[t];
    const MemoryLayoutDesc& layout = inputs[t]->layout();
    const ObjectKey& key = keys[t];
    SerializeOutcome got = run_serialize(*ser, *inputs[t], want.estimate,
                                         200 + 7 * t + static_cast<std::uint64_t>(r), key);
    if (!got.error.empty()) return "thread " + std::to_string(t) + ": " + got.error;
    // A randomized serde (a fresh IV per call) differs in its bytes but not in their count; its
    // round trip below is still compared with one thread alone.
    const bool differs = serde.integrity.randomized
                             ? got.bytes.size() != want.serialized.bytes.size()
                             : got.bytes != want.serialized.bytes;
    if (differs) {
      return "serialize() on thread " + std::to_string(t) + " of " + std::to_string(inputs.size()) +
             " sharing one instance differs from one thread "
             "alone: " +
             first_byte_difference(want.serialized.bytes, got.bytes) + where(layout, key);
    }
    GuardedObject bytes = serialized_buffer(got.bytes, want.estimate);
    GuardedObject out(layout, layout.total_bytes(), 300 + t);
    if (auto ex = throws([&] { deser->deserialize(*bytes, *out, key); })) {
      return "deserialize() on thread " + std::to_string(t) + " threw: " + *ex + where(layout, key);
    }
    if (std::string g = out.check_guards(); !g.empty()) {
      return "deserialize() on thread " + std::to_string(t) +
             " wrote outside its destination: " + g + where(layout, key);
    }
    auto decoded = out.payload().first(layout.total_bytes());
    if (!std::equal(decoded.begin(), decoded.end(), want.decoded.begin(), want.decoded.end())) {
      std::vector<std::byte> got_decoded(decoded.begin(), decoded.end());
      return "deserialize() on thread " + std::to_string(t) + " of " +
             std::to_string(inputs.size()) +
             " sharing one instance decoded differently from one "
             "thread alone: " +
             first_byte_difference(want.decoded, got_decoded) + " (state shared between calls?)" +
             where(layout);
    }
    return std::string();
  });
  if (!error.empty()) return AssertionFailure() << error;
  return AssertionSuccess();
}

}  // namespace lmcache::conformance
