#include "lmcache/conformance/verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"

namespace lmcache::conformance {

namespace {

using ::testing::AssertionFailure;
using ::testing::AssertionResult;
using ::testing::AssertionSuccess;

std::string Where(const MemoryLayoutDesc& layout) {
  return " [input layout " + layout.to_string() + "]";
}

std::string WhatOf(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

// Runs `fn`; the text of whatever it throws, or nullopt.
template <class Fn>
std::optional<std::string> Throws(Fn&& fn) {
  try {
    fn();
  } catch (...) {
    return WhatOf(std::current_exception());
  }
  return std::nullopt;
}

// How a call that must throw std::invalid_argument behaved: empty when it did.
template <class Fn>
std::string ExpectInvalidArgument(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument&) {
    return {};
  } catch (const std::exception& e) {
    return std::string("threw a different exception instead of std::invalid_argument: ") + e.what();
  } catch (...) {
    return "threw a non-standard exception instead of std::invalid_argument";
  }
  return "did not throw";
}

struct SerializeOutcome {
  std::string error;  // empty on success
  std::size_t count = 0;
  std::vector<std::byte> bytes;  // the first `count` bytes written
};

// Serializes `src` into a fresh guarded buffer of `physical` bytes.
SerializeOutcome RunSerialize(Serializer& s, const MemoryObj& src, std::size_t physical,
                              std::uint64_t fill_seed = 7) {
  SerializeOutcome out;
  GuardedObject dst = GuardedObject::Bytes(physical, fill_seed);
  if (auto e = Throws([&] { out.count = s.serialize(src, *dst); })) {
    out.error = "serialize() threw: " + *e;
    return out;
  }
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    out.error = "serialize() wrote outside its destination: " + g;
    return out;
  }
  if (out.count > physical) {
    out.error = "serialize() returned " + std::to_string(out.count) +
                " bytes, more than its destination's " + std::to_string(physical);
    return out;
  }
  auto p = dst.payload();
  out.bytes.assign(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(out.count));
  return out;
}

std::optional<std::size_t> Estimate(const Serializer& s, const MemoryLayoutDesc& layout,
                                    std::string* error) {
  std::size_t e = 0;
  if (auto ex = Throws([&] { e = s.estimate_serialized_size(layout); })) {
    *error = "estimate_serialized_size() threw: " + *ex;
    return std::nullopt;
  }
  return e;
}

// Estimates `src`'s layout (into *est), then serializes into a buffer of exactly that size;
// an estimate that throws is reported in the outcome's error like a failing serialize.
SerializeOutcome SerializeAtEstimate(Serializer& s, const MemoryObj& src, std::size_t* est) {
  std::string error;
  std::optional<std::size_t> e = Estimate(s, src.layout(), &error);
  if (!e) return SerializeOutcome{std::move(error), 0, {}};
  *est = *e;
  return RunSerialize(s, src, *e);
}

// A byte buffer holding `bytes`, physical size `physical` (>= bytes.size()), narrowed to the
// byte count as a processor narrows a temp.
GuardedObject SerializedBuffer(const std::vector<std::byte>& bytes, std::size_t physical) {
  GuardedObject buf = GuardedObject::Bytes(std::max(physical, bytes.size()), 11);
  if (!bytes.empty()) std::memcpy(buf->data(), bytes.data(), bytes.size());
  buf->set_used_size(bytes.size());
  return buf;
}

MemoryObjPtr Clone(const MemoryObj& src) {
  MemoryObjPtr c = MakeObject(src.layout());
  if (src.layout().total_bytes() > 0) {
    std::memcpy(c->data(), src.data(), src.layout().total_bytes());
  }
  return c;
}

std::string FirstByteDifference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      return "first difference at byte " + std::to_string(i) + " (" +
             HexPreview(std::span<const std::byte>(a).subspan(i), 4) + " vs " +
             HexPreview(std::span<const std::byte>(b).subspan(i), 4) + ")";
    }
  }
  if (a.size() != b.size()) {
    return "lengths differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  }
  return {};
}

// Compares a round trip's output `got` with the input `src` per `loss`.
AssertionResult CompareRoundTrip(const Lossiness& loss, const MemoryObj& src, const MemoryObj& got,
                                 QualityReport* quality) {
  const MemoryLayoutDesc& layout = src.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    DType dtype = layout.dtypes()[g];
    std::size_t es = element_size(dtype);
    auto a = src.group_bytes(g);
    auto b = got.group_bytes(g);
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      const std::byte* pa = a.data() + i * es;
      const std::byte* pb = b.data() + i * es;
      double x = ReadElement(dtype, pa);
      double y = ReadElement(dtype, pb);
      if (std::isnan(x)) {
        if (!std::isnan(y)) {
          return AssertionFailure()
                 << "round trip turned a NaN into a number: " << DescribeElement(layout, g, i, x, y)
                 << Where(layout);
        }
        continue;
      }
      if (loss.lossless) {
        if (std::memcmp(pa, pb, es) != 0) {
          return AssertionFailure()
                 << "round trip of a lossless serde changed " << DescribeElement(layout, g, i, x, y)
                 << " (bytes " << HexPreview({pa, es}) << " -> " << HexPreview({pb, es}) << ")"
                 << Where(layout);
        }
        continue;
      }
      if (std::isinf(x)) {
        if (y != x) {
          return AssertionFailure()
                 << "round trip did not keep an infinity: " << DescribeElement(layout, g, i, x, y)
                 << Where(layout);
        }
        continue;
      }
      if (!std::isfinite(y)) {
        return AssertionFailure() << "round trip turned a finite value into "
                                  << (std::isnan(y) ? "NaN" : "an infinity") << ": "
                                  << DescribeElement(layout, g, i, x, y) << Where(layout);
      }
      double err = std::fabs(x - y);
      double hard = std::max(loss.hard_abs, loss.hard_rel * std::fabs(x));
      if (err > hard) {
        return AssertionFailure() << "round trip error " << err
                                  << " exceeds the declared hard bound " << hard << " (abs "
                                  << loss.hard_abs << ", rel " << loss.hard_rel
                                  << "): " << DescribeElement(layout, g, i, x, y) << Where(layout);
      }
      double soft = std::max(loss.soft_abs, loss.soft_rel * std::fabs(x));
      if (quality != nullptr && err > soft) {
        double ratio = soft > 0 ? err / soft : INFINITY;
        if (!quality->exceeded_soft || ratio > quality->worst_ratio) {
          quality->exceeded_soft = true;
          quality->worst_ratio = ratio;
          std::ostringstream os;
          os << "error " << err << " above the soft bound " << soft << " at "
             << DescribeElement(layout, g, i, x, y) << Where(layout);
          quality->worst = os.str();
        }
      }
    }
  }
  return AssertionSuccess();
}

bool SlotRequired(const SerdeUnderTest& serde, std::size_t slot) {
  return serde.multi_required_slots.empty() || slot >= serde.multi_required_slots.size() ||
         serde.multi_required_slots[slot];
}

}  // namespace

void QualityReport::Merge(const QualityReport& other) {
  if (other.exceeded_soft && (!exceeded_soft || other.worst_ratio > worst_ratio)) *this = other;
}

MultiSerializerPtr MakeMultiSerializer(const SerdeUnderTest& serde) {
  if (serde.make_multi_serializer) return serde.make_multi_serializer();
  return single_to_multi_serializer(serde.make_serializer());
}

MultiDeserializerPtr MakeMultiDeserializer(const SerdeUnderTest& serde) {
  if (serde.make_multi_deserializer) return serde.make_multi_deserializer();
  return single_to_multi_deserializer(serde.make_deserializer());
}

AssertionResult VerifySerializeDeterministic(const SerdeUnderTest& serde, const MemoryObj& src) {
  SerializerPtr first = serde.make_serializer();
  std::string error;
  auto est = Estimate(*first, src.layout(), &error);
  if (!est) return AssertionFailure() << error << Where(src.layout());
  SerializeOutcome runs[3];
  runs[0] = RunSerialize(*first, src, *est, 21);
  runs[1] = RunSerialize(*first, src, *est, 22);  // same instance, different stale bytes
  SerializerPtr fresh = serde.make_serializer();
  runs[2] = RunSerialize(*fresh, src, *est, 23);
  const char* names[3] = {"the first call", "a second call on the same instance",
                          "a call on a fresh instance"};
  for (auto& r : runs) {
    if (!r.error.empty()) return AssertionFailure() << r.error << Where(src.layout());
  }
  for (int i = 1; i < 3; ++i) {
    if (runs[i].count != runs[0].count || runs[i].bytes != runs[0].bytes) {
      return AssertionFailure() << "serialize() is not deterministic: " << names[i] << " gave "
                                << runs[i].count << " bytes, " << names[0] << " " << runs[0].count
                                << "; " << FirstByteDifference(runs[0].bytes, runs[i].bytes)
                                << Where(src.layout());
    }
  }
  return AssertionSuccess();
}

AssertionResult VerifySerializeThreadSafe(const SerdeUnderTest& serde, const MemoryObj& src,
                                          int threads) {
  std::string error;
  SerializerPtr reference = serde.make_serializer();
  auto est = Estimate(*reference, src.layout(), &error);
  if (!est) return AssertionFailure() << error << Where(src.layout());
  SerializeOutcome expected = RunSerialize(*reference, src, *est);
  if (!expected.error.empty()) return AssertionFailure() << expected.error << Where(src.layout());

  SerializerPtr shared = serde.make_serializer();
  constexpr int kRounds = 2;
  std::vector<SerializeOutcome> got(static_cast<std::size_t>(threads * kRounds));
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();  // maximise overlap
      for (int r = 0; r < kRounds; ++r) {
        got[static_cast<std::size_t>(t * kRounds + r)] =
            RunSerialize(*shared, src, *est, 100 + static_cast<std::uint64_t>(t));
      }
    });
  }
  for (auto& th : pool) th.join();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!got[i].error.empty()) {
      return AssertionFailure() << "concurrent call " << i << ": " << got[i].error
                                << Where(src.layout());
    }
    if (got[i].count != expected.count || got[i].bytes != expected.bytes) {
      return AssertionFailure() << "serialize() from " << threads
                                << " threads sharing one instance is not deterministic: call " << i
                                << " gave " << got[i].count << " bytes vs " << expected.count
                                << "; " << FirstByteDifference(expected.bytes, got[i].bytes)
                                << Where(src.layout());
    }
  }
  return AssertionSuccess();
}

AssertionResult VerifyEstimateIsUpperBound(const SerdeUnderTest& serde, const MemoryObj& src) {
  SerializerPtr s = serde.make_serializer();
  std::string error;
  auto est = Estimate(*s, src.layout(), &error);
  if (!est) return AssertionFailure() << error << Where(src.layout());
  // Room well past the estimate, so an under-estimate shows as a count, not as an overrun.
  std::size_t room = 2 * *est + 2 * src.layout().total_bytes() + 64;
  SerializeOutcome out = RunSerialize(*s, src, room);
  if (!out.error.empty()) return AssertionFailure() << out.error << Where(src.layout());
  if (out.count > *est) {
    return AssertionFailure() << "estimate_serialized_size() = " << *est
                              << " is not an upper bound: serialize() wrote " << out.count
                              << " bytes" << Where(src.layout());
  }
  return AssertionSuccess();
}

AssertionResult VerifyEstimateDependsOnLayoutOnly(const SerdeUnderTest& serde, const MemoryObj& a,
                                                  const MemoryObj& b) {
  if (!(a.layout() == b.layout())) {
    return AssertionFailure()
           << "VerifyEstimateDependsOnLayoutOnly needs two objects of one layout";
  }
  const MemoryLayoutDesc& layout = a.layout();
  std::string error;
  SerializerPtr s = serde.make_serializer();
  auto e0 = Estimate(*s, layout, &error);
  if (!e0) return AssertionFailure() << error << Where(layout);
  std::size_t room = 2 * *e0 + 2 * layout.total_bytes() + 64;
  std::optional<std::size_t> seen[2];
  const MemoryObj* inputs[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    SerializeOutcome out = RunSerialize(*s, *inputs[i], room);
    if (!out.error.empty()) return AssertionFailure() << out.error << Where(layout);
    seen[i] = Estimate(*s, layout, &error);
    if (!seen[i]) return AssertionFailure() << error << Where(layout);
    if (*seen[i] != *e0) {
      return AssertionFailure() << "estimate_serialized_size() depends on more than the layout: "
                                << *e0 << " before, " << *seen[i] << " after serializing input "
                                << (i == 0 ? "A" : "B") << " of the same layout" << Where(layout);
    }
  }
  SerializerPtr fresh = serde.make_serializer();
  auto ef = Estimate(*fresh, layout, &error);
  if (!ef) return AssertionFailure() << error << Where(layout);
  if (*ef != *e0) {
    return AssertionFailure() << "estimate_serialized_size() differs between instances: " << *e0
                              << " vs " << *ef << Where(layout);
  }
  return AssertionSuccess();
}

AssertionResult VerifySerdeRoundTrip(const SerdeUnderTest& serde, const MemoryObj& src,
                                     QualityReport* quality) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  DeserializerPtr d = serde.make_deserializer();
  std::size_t est = 0;
  SerializeOutcome out = SerializeAtEstimate(*s, src, &est);
  if (!out.error.empty()) return AssertionFailure() << out.error << Where(layout);
  GuardedObject bytes = SerializedBuffer(out.bytes, est);
  GuardedObject dst(layout, layout.total_bytes(), 31);  // stale bytes: every one must be written
  if (auto e = Throws([&] { d->deserialize(*bytes, *dst); })) {
    return AssertionFailure() << "deserialize() threw on serialize()'s own output: " << *e
                              << Where(layout);
  }
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "deserialize() wrote outside its destination: " << g
                              << Where(layout);
  }
  return CompareRoundTrip(serde.lossiness, src, *dst, quality);
}

AssertionResult VerifyBytesPastCountUntouched(const SerdeUnderTest& serde, const MemoryObj& src) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  std::string error;
  auto est = Estimate(*s, layout, &error);
  if (!est) return AssertionFailure() << error << Where(layout);
  const std::size_t physical = *est + 32;
  GuardedObject dst = GuardedObject::Bytes(physical, 41);
  std::vector<std::byte> before = dst.snapshot();
  MemoryObjPtr input = Clone(src);
  std::size_t n = 0;
  if (auto e = Throws([&] { n = s->serialize(*input, *dst); })) {
    return AssertionFailure() << "serialize() threw: " << *e << Where(layout);
  }
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "serialize() wrote outside its destination: " << g
                              << Where(layout);
  }
  if (n > physical) {
    return AssertionFailure() << "serialize() returned " << n << " for a " << physical
                              << "-byte destination" << Where(layout);
  }
  if (std::string c = dst.CheckPayloadUnchanged(before, n, physical); !c.empty()) {
    return AssertionFailure() << "serialize() returned " << n
                              << " but wrote past that count: destination " << c << Where(layout);
  }
  if (layout.total_bytes() > 0 &&
      std::memcmp(input->data(), src.data(), layout.total_bytes()) != 0) {
    return AssertionFailure() << "serialize() modified its source" << Where(layout);
  }
  return AssertionSuccess();
}

AssertionResult VerifyShortBufferRejected(const SerdeUnderTest& serde, const MemoryObj& src,
                                          std::size_t shortfall) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  std::string error;
  auto est = Estimate(*s, layout, &error);
  if (!est) return AssertionFailure() << error << Where(layout);
  SerializeOutcome full = RunSerialize(*s, src, *est + 64);
  if (!full.error.empty()) return AssertionFailure() << full.error << Where(layout);
  if (full.count == 0) return AssertionSuccess();  // nothing can be short of 0 bytes
  std::size_t size = full.count > shortfall ? full.count - shortfall : 0;
  // A guard as long as the whole output: a serializer that ignores the size overruns into
  // the guard, never past this allocation.
  GuardedObject dst = GuardedObject::Bytes(size, 51, full.count + GuardedObject::kGuardBytes);
  std::vector<std::byte> before = dst.snapshot();
  std::string how = ExpectInvalidArgument([&] { s->serialize(src, *dst); });
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "serialize() overran a " << size << "-byte destination (needs "
                              << full.count << "): " << g << Where(layout);
  }
  if (!how.empty()) {
    return AssertionFailure() << "serialize() into a " << size << "-byte destination (needs "
                              << full.count << ") " << how << Where(layout);
  }
  if (std::string c = dst.CheckPayloadUnchanged(before, 0, size); !c.empty()) {
    return AssertionFailure() << "serialize() rejected a short destination but wrote into it: " << c
                              << Where(layout);
  }
  return AssertionSuccess();
}

AssertionResult VerifyDeserializeWritesOnlyDestination(const SerdeUnderTest& serde,
                                                       const MemoryObj& src) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  DeserializerPtr d = serde.make_deserializer();
  std::size_t est = 0;
  SerializeOutcome out = SerializeAtEstimate(*s, src, &est);
  if (!out.error.empty()) return AssertionFailure() << out.error << Where(layout);
  GuardedObject bytes = SerializedBuffer(out.bytes, out.bytes.size());  // exact size
  std::vector<std::byte> bytes_before = bytes.snapshot();
  GuardedObject dst(layout, layout.total_bytes(), 61);
  if (auto e = Throws([&] { d->deserialize(*bytes, *dst); })) {
    return AssertionFailure() << "deserialize() threw on serialize()'s own output: " << *e
                              << Where(layout);
  }
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "deserialize() wrote outside its destination: " << g
                              << Where(layout);
  }
  if (std::string g = bytes.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "deserialize() wrote around its source: " << g << Where(layout);
  }
  if (std::string c = bytes.CheckPayloadUnchanged(bytes_before, 0, bytes_before.size());
      !c.empty()) {
    return AssertionFailure() << "deserialize() modified its source: " << c << Where(layout);
  }
  return AssertionSuccess();
}

AssertionResult VerifyShortSourceRejected(const SerdeUnderTest& serde, const MemoryObj& src,
                                          std::size_t shortfall) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  DeserializerPtr d = serde.make_deserializer();
  std::size_t est = 0;
  SerializeOutcome out = SerializeAtEstimate(*s, src, &est);
  if (!out.error.empty()) return AssertionFailure() << out.error << Where(layout);
  if (out.count == 0) return AssertionSuccess();
  std::size_t size = out.count > shortfall ? out.count - shortfall : 0;
  std::vector<std::byte> truncated(out.bytes.begin(),
                                   out.bytes.begin() + static_cast<std::ptrdiff_t>(size));
  GuardedObject bytes = SerializedBuffer(truncated, size);
  GuardedObject dst(layout, layout.total_bytes(), 71);
  std::vector<std::byte> before = dst.snapshot();
  std::string how = ExpectInvalidArgument([&] { d->deserialize(*bytes, *dst); });
  if (!how.empty()) {
    return AssertionFailure() << "deserialize() of a source truncated to " << size << " of "
                              << out.count << " bytes " << how << Where(layout);
  }
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "deserialize() wrote outside its destination: " << g
                              << Where(layout);
  }
  if (std::string c = dst.CheckPayloadUnchanged(before, 0, before.size()); !c.empty()) {
    return AssertionFailure() << "deserialize() rejected a short source but wrote its destination: "
                              << c << Where(layout);
  }
  return AssertionSuccess();
}

AssertionResult VerifyUnsupportedInputRejected(const SerdeUnderTest& serde, const MemoryObj& src) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  const std::size_t physical = 2 * layout.total_bytes() + 64;
  GuardedObject dst = GuardedObject::Bytes(physical, 81);
  std::vector<std::byte> before = dst.snapshot();
  std::string how = ExpectInvalidArgument([&] { s->serialize(src, *dst); });
  if (!how.empty()) {
    return AssertionFailure() << "serialize() of a layout with an undeclared dtype " << how
                              << Where(layout);
  }
  if (std::string g = dst.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "serialize() wrote outside its destination: " << g
                              << Where(layout);
  }
  if (std::string c = dst.CheckPayloadUnchanged(before, 0, physical); !c.empty()) {
    return AssertionFailure() << "serialize() rejected an undeclared dtype but wrote: " << c
                              << Where(layout);
  }
  return AssertionSuccess();
}

AssertionResult VerifyMultiNoneSlotRules(const SerdeUnderTest& serde, const MemoryObj& src) {
  const MemoryLayoutDesc& layout = src.layout();
  MultiSerializerPtr ms = MakeMultiSerializer(serde);
  MultiDeserializerPtr md = MakeMultiDeserializer(serde);
  const std::size_t g = ms->group_size();
  if (g == 0) return AssertionFailure() << "multi serializer has group_size() 0";
  if (md->group_size() != g) {
    return AssertionFailure() << "multi serializer and deserializer disagree on group_size(): " << g
                              << " vs " << md->group_size();
  }
  MemoryObjGroup group;
  for (std::size_t i = 0; i < g; ++i) group.push_back(Clone(src));
  LayoutDescGroup layouts(g, layout);
  std::size_t est = 0;
  if (auto e = Throws([&] { est = ms->estimate_serialized_size(layouts); })) {
    return AssertionFailure() << "multi estimate_serialized_size() threw: " << *e << Where(layout);
  }
  const std::size_t room = est + 64;

  // Wrong group length, both directions.
  {
    MemoryObjGroup longer = group;
    longer.push_back(Clone(src));
    GuardedObject dst = GuardedObject::Bytes(room + layout.total_bytes() + 64, 91);
    std::string how = ExpectInvalidArgument([&] { ms->serialize(longer, *dst); });
    if (!how.empty()) {
      return AssertionFailure() << "multi serialize() of a group of " << g + 1 << " (group_size "
                                << g << ") " << how << Where(layout);
    }
  }
  // A null required source slot, and a nullopt required layout.
  for (std::size_t slot = 0; slot < g; ++slot) {
    MemoryObjGroup holed = group;
    holed[slot] = nullptr;
    LayoutDescGroup holed_layouts = layouts;
    holed_layouts[slot] = std::nullopt;
    GuardedObject dst = GuardedObject::Bytes(room, 92);
    std::vector<std::byte> before = dst.snapshot();
    if (SlotRequired(serde, slot)) {
      std::string how = ExpectInvalidArgument([&] { ms->serialize(holed, *dst); });
      if (!how.empty()) {
        return AssertionFailure() << "multi serialize() with None in required src slot " << slot
                                  << " " << how << Where(layout);
      }
      if (std::string c = dst.CheckPayloadUnchanged(before, 0, room); !c.empty()) {
        return AssertionFailure() << "multi serialize() rejected a None src slot but wrote: " << c;
      }
      how = ExpectInvalidArgument([&] { ms->estimate_serialized_size(holed_layouts); });
      if (!how.empty()) {
        return AssertionFailure() << "multi estimate_serialized_size() with None in required slot "
                                  << slot << " " << how << Where(layout);
      }
    } else if (auto e = Throws([&] { ms->estimate_serialized_size(holed_layouts); })) {
      return AssertionFailure()
             << "multi estimate_serialized_size() rejected None in optional slot " << slot << ": "
             << *e << Where(layout);
    }
    if (std::string gr = dst.CheckGuards(); !gr.empty()) {
      return AssertionFailure() << "multi serialize() wrote outside its destination: " << gr;
    }
  }

  // The full round trip, to compare partial deserializations with.
  GuardedObject bytes = GuardedObject::Bytes(room, 93);
  std::size_t n = 0;
  if (auto e = Throws([&] { n = ms->serialize(group, *bytes); })) {
    return AssertionFailure() << "multi serialize() threw: " << *e << Where(layout);
  }
  if (n > room) return AssertionFailure() << "multi serialize() returned " << n << " > " << room;
  bytes->set_used_size(n);
  std::vector<MemoryObjPtr> full;
  MemoryObjGroup full_group;
  for (std::size_t i = 0; i < g; ++i) {
    full.push_back(MakeObject(layout));
    full_group.push_back(full.back());
  }
  if (auto e = Throws([&] { md->deserialize(*bytes, full_group); })) {
    return AssertionFailure() << "multi deserialize() threw on its own output: " << *e
                              << Where(layout);
  }
  {
    MemoryObjGroup longer = full_group;
    longer.push_back(MakeObject(layout));
    std::string how = ExpectInvalidArgument([&] { md->deserialize(*bytes, longer); });
    if (!how.empty()) {
      return AssertionFailure() << "multi deserialize() into a group of " << g + 1
                                << " (group_size " << g << ") " << how << Where(layout);
    }
  }

  // Every destination slot None: a deliberate skip. A length-1 bridge must read nothing, so it
  // gets an empty source it could not decode.
  {
    GuardedObject empty = GuardedObject::Bytes(g == 1 ? 0 : n, 94);
    if (g != 1 && n > 0) std::memcpy(empty->data(), bytes->data(), n);
    std::vector<std::byte> before = empty.snapshot();
    MemoryObjGroup none(g, nullptr);
    if (auto e = Throws([&] { md->deserialize(*empty, none); })) {
      return AssertionFailure() << "multi deserialize() with every dst slot None must be a no-op"
                                << (g == 1 ? " that reads nothing" : "") << ", but threw: " << *e
                                << Where(layout);
    }
    if (std::string c = empty.CheckPayloadUnchanged(before, 0, before.size()); !c.empty()) {
      return AssertionFailure() << "multi deserialize() with None dst slots modified its source: "
                                << c;
    }
  }
  // One None slot at a time: the others come out as in the full round trip.
  if (g > 1) {
    for (std::size_t slot = 0; slot < g; ++slot) {
      MemoryObjGroup partial;
      std::vector<MemoryObjPtr> keep;
      for (std::size_t i = 0; i < g; ++i) {
        keep.push_back(i == slot ? nullptr : MakeObject(layout));
        partial.push_back(keep.back());
      }
      if (auto e = Throws([&] { md->deserialize(*bytes, partial); })) {
        return AssertionFailure() << "multi deserialize() with None dst slot " << slot
                                  << " threw: " << *e << Where(layout);
      }
      for (std::size_t i = 0; i < g; ++i) {
        if (i == slot || layout.total_bytes() == 0) continue;
        if (std::memcmp(partial[i]->data(), full[i]->data(), layout.total_bytes()) != 0) {
          return AssertionFailure()
                 << "multi deserialize() with None dst slot " << slot << " filled slot " << i
                 << " differently from a full group" << Where(layout);
        }
      }
    }
  }
  return AssertionSuccess();
}

AssertionResult VerifyBridgeEquivalence(const SerdeUnderTest& serde, const MemoryObj& src) {
  const MemoryLayoutDesc& layout = src.layout();
  MultiSerializerPtr ms = MakeMultiSerializer(serde);
  MultiDeserializerPtr md = MakeMultiDeserializer(serde);
  if (ms->group_size() != 1 || md->group_size() != 1) {
    return AssertionFailure() << "bridge equivalence needs a group_size() 1 multi serde, got "
                              << ms->group_size() << " / " << md->group_size();
  }
  SerializerPtr s = serde.make_serializer();
  DeserializerPtr d = serde.make_deserializer();
  std::string error;
  auto est = Estimate(*s, layout, &error);
  if (!est) return AssertionFailure() << error << Where(layout);
  std::size_t multi_est = 0;
  if (auto e = Throws([&] { multi_est = ms->estimate_serialized_size({layout}); })) {
    return AssertionFailure() << "bridge estimate_serialized_size() threw: " << *e << Where(layout);
  }
  if (multi_est != *est) {
    return AssertionFailure() << "bridge estimate " << multi_est << " differs from the direct "
                              << *est << Where(layout);
  }
  SerializeOutcome direct = RunSerialize(*s, src, *est, 101);
  if (!direct.error.empty()) return AssertionFailure() << direct.error << Where(layout);
  GuardedObject via = GuardedObject::Bytes(*est, 102);
  std::size_t n = 0;
  MemoryObjPtr input = Clone(src);
  if (auto e = Throws([&] { n = ms->serialize({input}, *via); })) {
    return AssertionFailure() << "bridge serialize() threw: " << *e << Where(layout);
  }
  if (std::string g = via.CheckGuards(); !g.empty()) {
    return AssertionFailure() << "bridge serialize() wrote outside its destination: " << g;
  }
  std::vector<std::byte> via_bytes(
      via.payload().begin(),
      via.payload().begin() + static_cast<std::ptrdiff_t>(std::min(n, *est)));
  if (n != direct.count || via_bytes != direct.bytes) {
    return AssertionFailure() << "bridge serialize() is not byte-identical to a direct call: " << n
                              << " vs " << direct.count << " bytes; "
                              << FirstByteDifference(direct.bytes, via_bytes) << Where(layout);
  }
  GuardedObject bytes = SerializedBuffer(direct.bytes, *est);
  MemoryObjPtr a = MakeObject(layout);
  MemoryObjPtr b = MakeObject(layout);
  if (auto e = Throws([&] { d->deserialize(*bytes, *a); })) {
    return AssertionFailure() << "deserialize() threw: " << *e << Where(layout);
  }
  if (auto e = Throws([&] { md->deserialize(*bytes, {b}); })) {
    return AssertionFailure() << "bridge deserialize() threw: " << *e << Where(layout);
  }
  if (layout.total_bytes() > 0 && std::memcmp(a->data(), b->data(), layout.total_bytes()) != 0) {
    return AssertionFailure() << "bridge deserialize() is not identical to a direct call"
                              << Where(layout);
  }
  return AssertionSuccess();
}

}  // namespace lmcache::conformance
