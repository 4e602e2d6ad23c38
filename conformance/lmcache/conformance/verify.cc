#include "lmcache/conformance/verify.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/serde_checks.h"

namespace lmcache::conformance {

using namespace conformance_internal;  // the serde check building blocks

namespace {

// The estimate `s` gives for `layout`, into *bytes; a failure naming what estimate() threw.
AssertionResult estimated(const Serializer& s, const MemoryLayoutDesc& layout, const ObjectKey& key,
                          std::size_t* bytes) {
  std::string error;
  std::optional<std::size_t> est = estimate(s, layout, &error);
  if (!est) return AssertionFailure() << error << where(layout, key);
  *bytes = *est;
  return AssertionSuccess();
}

// serialize()'s output for `src` under `key`, from a fresh serializer of `serde`, into a buffer
// of exactly its estimate (into *out, the estimate into *est); a failure naming what went wrong.
AssertionResult serialized_at_estimate(const SerdeUnderTest& serde, const MemoryObj& src,
                                       const ObjectKey& key, SerializeOutcome* out,
                                       std::size_t* est) {
  SerializerPtr s = serde.make_serializer();
  *out = serialize_at_estimate(*s, src, est, key);
  if (!out->error.empty()) return AssertionFailure() << out->error << where(src.layout(), key);
  return AssertionSuccess();
}

// Deserializes `bytes`, serialize()'s own output, into `dst`: a failure when deserialize()
// throws or writes outside `dst`.
AssertionResult deserialize_own_output(Deserializer& d, const GuardedObject& bytes,
                                       const GuardedObject& dst, const MemoryLayoutDesc& layout,
                                       const ObjectKey& key) {
  if (auto e = throws([&] { d.deserialize(*bytes, *dst, key); })) {
    return AssertionFailure() << "deserialize() threw on serialize()'s own output: " << *e
                              << where(layout, key);
  }
  if (std::string g = dst.check_guards(); !g.empty()) {
    return AssertionFailure() << "deserialize() wrote outside its destination: " << g
                              << where(layout, key);
  }
  return AssertionSuccess();
}

}  // namespace

void QualityReport::Merge(const QualityReport& other) {
  if (other.exceeded_soft && (!exceeded_soft || other.worst_ratio > worst_ratio)) *this = other;
}

AssertionResult verify_serialize_deterministic(const SerdeUnderTest& serde, const MemoryObj& src,
                                               const ObjectKey& key) {
  SerializerPtr first = serde.make_serializer();
  std::size_t est = 0;
  if (AssertionResult r = estimated(*first, src.layout(), key, &est); !r) return r;
  // The same values in buffers with different junk past the layout: only the layout's bytes
  // may matter.
  const std::size_t slack = junk_slack(src.layout());
  MemoryObjPtr junk_a = clone_object(src, slack, 31);
  MemoryObjPtr junk_b = clone_object(src, slack + 7, 32);
  SerializeOutcome runs[4];
  runs[0] = run_serialize(*first, src, est, 21, key);
  runs[1] = run_serialize(*first, src, est, 22, key);  // same instance, different stale bytes
  SerializerPtr fresh = serde.make_serializer();
  runs[2] = run_serialize(*fresh, src, est, 23, key);
  runs[3] = run_serialize(*fresh, *junk_a, est, 24, key);
  SerializeOutcome with_b = run_serialize(*fresh, *junk_b, est, 25, key);
  const char* names[4] = {"the first call", "a second call on the same instance",
                          "a call on a fresh instance",
                          "a call whose source buffer holds junk past its layout"};
  for (auto& r : runs) {
    if (!r.error.empty()) return AssertionFailure() << r.error << where(src.layout(), key);
  }
  if (!with_b.error.empty()) return AssertionFailure() << with_b.error << where(src.layout(), key);
  if (with_b.count != runs[3].count || with_b.bytes != runs[3].bytes) {
    return AssertionFailure() << "serialize() depends on the bytes past the source's layout: two "
                                 "copies of one input with different junk after it gave "
                              << runs[3].count << " and " << with_b.count << " bytes; "
                              << first_byte_difference(runs[3].bytes, with_b.bytes)
                              << where(src.layout(), key);
  }
  for (int i = 1; i < 4; ++i) {
    if (runs[i].count != runs[0].count || runs[i].bytes != runs[0].bytes) {
      return AssertionFailure() << "serialize() is not deterministic: " << names[i] << " gave "
                                << runs[i].count << " bytes, " << names[0] << " " << runs[0].count
                                << "; " << first_byte_difference(runs[0].bytes, runs[i].bytes)
                                << where(src.layout(), key);
    }
  }
  return AssertionSuccess();
}

AssertionResult verify_serialize_thread_safe(const SerdeUnderTest& serde, const MemoryObj& src,
                                             int threads) {
  std::vector<MemoryObjPtr> copies;
  for (int t = 0; t < threads; ++t) copies.push_back(clone_object(src));
  return verify_concurrent_serialize(serde, copies);
}

AssertionResult verify_estimate_is_upper_bound(const SerdeUnderTest& serde, const MemoryObj& src,
                                               const ObjectKey& key) {
  SerializerPtr s = serde.make_serializer();
  std::size_t est = 0;
  if (AssertionResult r = estimated(*s, src.layout(), key, &est); !r) return r;
  // Room well past the estimate, so an under-estimate shows as a count, not as an overrun.
  std::size_t room = 2 * est + 2 * src.layout().total_bytes() + 64;
  SerializeOutcome out = run_serialize(*s, src, room, 7, key);
  if (!out.error.empty()) return AssertionFailure() << out.error << where(src.layout(), key);
  if (out.count > est) {
    return AssertionFailure() << "estimate_serialized_size() = " << est
                              << " is not an upper bound: serialize() wrote " << out.count
                              << " bytes" << where(src.layout(), key);
  }
  return AssertionSuccess();
}

AssertionResult verify_estimate_depends_on_layout_only(const SerdeUnderTest& serde,
                                                       const MemoryObj& a, const MemoryObj& b,
                                                       const ObjectKey& key) {
  if (!(a.layout() == b.layout())) {
    return AssertionFailure()
           << "verify_estimate_depends_on_layout_only needs two objects of one layout";
  }
  const MemoryLayoutDesc& layout = a.layout();
  SerializerPtr s = serde.make_serializer();
  std::size_t e0 = 0;
  if (AssertionResult r = estimated(*s, layout, key, &e0); !r) return r;
  std::size_t room = 2 * e0 + 2 * layout.total_bytes() + 64;
  const MemoryObj* inputs[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    SerializeOutcome out = run_serialize(*s, *inputs[i], room, 7, key);
    if (!out.error.empty()) return AssertionFailure() << out.error << where(layout, key);
    std::size_t seen = 0;
    if (AssertionResult r = estimated(*s, layout, key, &seen); !r) return r;
    if (seen != e0) {
      return AssertionFailure() << "estimate_serialized_size() depends on more than the layout: "
                                << e0 << " before, " << seen << " after serializing input "
                                << (i == 0 ? "A" : "B") << " of the same layout"
                                << where(layout, key);
    }
  }
  SerializerPtr fresh = serde.make_serializer();
  std::size_t ef = 0;
  if (AssertionResult r = estimated(*fresh, layout, key, &ef); !r) return r;
  if (ef != e0) {
    return AssertionFailure() << "estimate_serialized_size() differs between instances: " << e0
                              << " vs " << ef << where(layout, key);
  }
  return AssertionSuccess();
}

AssertionResult verify_serde_round_trip(const SerdeUnderTest& serde, const MemoryObj& src,
                                        QualityReport* quality, const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  DeserializerPtr d = serde.make_deserializer();
  SerializeOutcome out;
  std::size_t est = 0;
  if (AssertionResult r = serialized_at_estimate(serde, src, key, &out, &est); !r) return r;
  // Narrowed to the count, with junk past it, as a temp that held an estimate comes back.
  GuardedObject bytes = serialized_buffer(out.bytes, std::max(est, out.count) + junk_slack(layout));
  GuardedObject dst(layout, layout.total_bytes(), 31);  // stale bytes: every one must be written
  if (AssertionResult r = deserialize_own_output(*d, bytes, dst, layout, key); !r) return r;
  return compare_round_trip(serde.lossiness, src, *dst, quality);
}

AssertionResult verify_bytes_past_count_untouched(const SerdeUnderTest& serde, const MemoryObj& src,
                                                  const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  std::size_t est = 0;
  if (AssertionResult r = estimated(*s, layout, key, &est); !r) return r;
  const std::size_t physical = est + 32;
  GuardedObject dst = GuardedObject::Bytes(physical, 41);
  std::vector<std::byte> before = dst.snapshot();
  MemoryObjPtr input = clone_object(src);
  std::size_t n = 0;
  if (auto e = throws([&] { n = s->serialize(*input, *dst, key); })) {
    return AssertionFailure() << "serialize() threw: " << *e << where(layout, key);
  }
  if (std::string g = dst.check_guards(); !g.empty()) {
    return AssertionFailure() << "serialize() wrote outside its destination: " << g
                              << where(layout, key);
  }
  if (n > physical) {
    return AssertionFailure() << "serialize() returned " << n << " for a " << physical
                              << "-byte destination" << where(layout, key);
  }
  if (std::string c = dst.check_payload_unchanged(before, n, physical); !c.empty()) {
    return AssertionFailure() << "serialize() returned " << n
                              << " but wrote past that count: destination " << c
                              << where(layout, key);
  }
  if (layout.total_bytes() > 0 && !same_bytes(input->data(), src.data(), layout.total_bytes())) {
    return AssertionFailure() << "serialize() modified its source" << where(layout, key);
  }
  return AssertionSuccess();
}

AssertionResult verify_short_buffer_rejected(const SerdeUnderTest& serde, const MemoryObj& src,
                                             std::size_t shortfall, const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  std::size_t est = 0;
  if (AssertionResult r = estimated(*s, layout, key, &est); !r) return r;
  SerializeOutcome full = run_serialize(*s, src, est + 64, 7, key);
  if (!full.error.empty()) return AssertionFailure() << full.error << where(layout, key);
  if (full.count == 0) return AssertionSuccess();  // nothing can be short of 0 bytes
  std::size_t size = full.count > shortfall ? full.count - shortfall : 0;
  // A guard as long as the whole output: a serializer that ignores the size overruns into
  // the guard, never past this allocation.
  GuardedObject dst = GuardedObject::Bytes(size, 51, full.count + GuardedObject::kGuardBytes);
  std::vector<std::byte> before = dst.snapshot();
  std::string how = expect_invalid_argument([&] { s->serialize(src, *dst, key); });
  if (std::string g = dst.check_guards(); !g.empty()) {
    return AssertionFailure() << "serialize() overran a " << size << "-byte destination (needs "
                              << full.count << "): " << g << where(layout, key);
  }
  if (!how.empty()) {
    return AssertionFailure() << "serialize() into a " << size << "-byte destination (needs "
                              << full.count << ") " << how << where(layout, key);
  }
  if (std::string c = dst.check_payload_unchanged(before, 0, size); !c.empty()) {
    return AssertionFailure() << "serialize() rejected a short destination but wrote into it: " << c
                              << where(layout, key);
  }
  return AssertionSuccess();
}

AssertionResult verify_deserialize_writes_only_destination(const SerdeUnderTest& serde,
                                                           const MemoryObj& src,
                                                           const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  DeserializerPtr d = serde.make_deserializer();
  SerializeOutcome out;
  std::size_t est = 0;
  if (AssertionResult r = serialized_at_estimate(serde, src, key, &out, &est); !r) return r;
  GuardedObject bytes = serialized_buffer(out.bytes, out.bytes.size());  // exact size
  std::vector<std::byte> bytes_before = bytes.snapshot();
  GuardedObject dst(layout, layout.total_bytes(), 61);
  if (AssertionResult r = deserialize_own_output(*d, bytes, dst, layout, key); !r) return r;
  if (std::string g = bytes.check_guards(); !g.empty()) {
    return AssertionFailure() << "deserialize() wrote around its source: " << g
                              << where(layout, key);
  }
  if (std::string c = bytes.check_payload_unchanged(bytes_before, 0, bytes_before.size());
      !c.empty()) {
    return AssertionFailure() << "deserialize() modified its source: " << c << where(layout, key);
  }
  return AssertionSuccess();
}

AssertionResult verify_short_source_rejected(const SerdeUnderTest& serde, const MemoryObj& src,
                                             std::size_t shortfall, const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  DeserializerPtr d = serde.make_deserializer();
  SerializeOutcome out;
  std::size_t est = 0;
  if (AssertionResult r = serialized_at_estimate(serde, src, key, &out, &est); !r) return r;
  if (out.count == 0) return AssertionSuccess();
  std::size_t size = out.count > shortfall ? out.count - shortfall : 0;
  // Two sources: the truncated bytes alone, and every byte still in the buffer but size()
  // narrowed to the truncated length (a deserializer must read size(), not the buffer).
  std::vector<std::byte> truncated(out.bytes.begin(),
                                   out.bytes.begin() + static_cast<std::ptrdiff_t>(size));
  GuardedObject exact = serialized_buffer(truncated, size);
  GuardedObject narrowed = serialized_buffer(out.bytes, out.count + junk_slack(layout));
  narrowed->set_used_size(size);
  const struct {
    GuardedObject* bytes;
    const char* what;
  } sources[] = {{&exact, ""}, {&narrowed, " (narrowed: the buffer still holds every byte)"}};
  for (const auto& source : sources) {
    GuardedObject dst(layout, layout.total_bytes(), 71);
    std::vector<std::byte> before = dst.snapshot();
    std::string how = expect_invalid_argument([&] { d->deserialize(**source.bytes, *dst, key); });
    if (!how.empty()) {
      return AssertionFailure() << "deserialize() of a source truncated to " << size << " of "
                                << out.count << " bytes" << source.what << " " << how
                                << where(layout, key);
    }
    if (std::string g = dst.check_guards(); !g.empty()) {
      return AssertionFailure() << "deserialize() wrote outside its destination: " << g
                                << where(layout, key);
    }
    if (std::string c = dst.check_payload_unchanged(before, 0, before.size()); !c.empty()) {
      return AssertionFailure() << "deserialize() rejected a short source" << source.what
                                << " but wrote its destination: " << c << where(layout, key);
    }
  }
  return AssertionSuccess();
}

AssertionResult verify_unsupported_input_rejected(const SerdeUnderTest& serde, const MemoryObj& src,
                                                  const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  SerializerPtr s = serde.make_serializer();
  const std::size_t physical = 2 * layout.total_bytes() + 64;
  GuardedObject dst = GuardedObject::Bytes(physical, 81);
  std::vector<std::byte> before = dst.snapshot();
  std::string how = expect_invalid_argument([&] { s->serialize(src, *dst, key); });
  if (!how.empty()) {
    return AssertionFailure() << "serialize() of a layout with an undeclared dtype " << how
                              << where(layout, key);
  }
  if (std::string g = dst.check_guards(); !g.empty()) {
    return AssertionFailure() << "serialize() wrote outside its destination: " << g
                              << where(layout, key);
  }
  if (std::string c = dst.check_payload_unchanged(before, 0, physical); !c.empty()) {
    return AssertionFailure() << "serialize() rejected an undeclared dtype but wrote: " << c
                              << where(layout, key);
  }
  return AssertionSuccess();
}

}  // namespace lmcache::conformance
