#include "lmcache/conformance/internal/serde_checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types

std::string where(const MemoryLayoutDesc& layout) {
  return " [input layout " + layout.to_string() + "]";
}

std::string where(const MemoryLayoutDesc& layout, const ObjectKey& key) {
  if (key == probe_key()) return where(layout);
  return " [input layout " + layout.to_string() + ", key " + key.to_string() + "]";
}

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

// Serializes `src` into a fresh guarded buffer of `physical` bytes.
SerializeOutcome run_serialize(Serializer& s, const MemoryObj& src, std::size_t physical,
                               std::uint64_t fill_seed, const ObjectKey& key) {
  SerializeOutcome out;
  GuardedObject dst = GuardedObject::Bytes(physical, fill_seed);
  if (auto e = throws([&] { out.count = s.serialize(src, *dst, key); })) {
    out.error = "serialize() threw: " + *e;
    return out;
  }
  if (std::string g = dst.check_guards(); !g.empty()) {
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

std::optional<std::size_t> estimate(const Serializer& s, const MemoryLayoutDesc& layout,
                                    std::string* error) {
  std::size_t e = 0;
  if (auto ex = throws([&] { e = s.estimate_serialized_size(layout); })) {
    *error = "estimate_serialized_size() threw: " + *ex;
    return std::nullopt;
  }
  return e;
}

// Estimates `src`'s layout (into *est), then serializes into a buffer of exactly that size;
// an estimate that throws is reported in the outcome's error like a failing serialize.
SerializeOutcome serialize_at_estimate(Serializer& s, const MemoryObj& src, std::size_t* est,
                                       const ObjectKey& key) {
  std::string error;
  std::optional<std::size_t> e = estimate(s, src.layout(), &error);
  if (!e) return SerializeOutcome{std::move(error), 0, {}};
  *est = *e;
  return run_serialize(s, src, *e, 7, key);
}

// A byte buffer holding `bytes`, physical size `physical` (>= bytes.size()), narrowed to the
// byte count as a processor narrows a temp.
GuardedObject serialized_buffer(const std::vector<std::byte>& bytes, std::size_t physical) {
  GuardedObject buf = GuardedObject::Bytes(std::max(physical, bytes.size()), 11);
  if (!bytes.empty()) std::memcpy(buf->data(), bytes.data(), bytes.size());
  buf->set_used_size(bytes.size());
  return buf;
}

std::size_t junk_slack(const MemoryLayoutDesc& layout) {
  return 1 + (layout.total_elements() * 7 + layout.num_groups()) % 61;
}

MemoryObjPtr clone_object(const MemoryObj& src, std::size_t slack, std::uint64_t junk_seed) {
  const std::size_t bytes = src.layout().total_bytes();
  MemoryObjPtr c = make_object(src.layout(), bytes + slack);
  if (bytes > 0) std::memcpy(c->data(), src.data(), bytes);
  if (slack > 0) fill_bytes(c->physical_bytes().subspan(bytes), junk_seed);
  return c;
}

std::string first_byte_difference(const std::vector<std::byte>& a,
                                  const std::vector<std::byte>& b) {
  std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      return "first difference at byte " + std::to_string(i) + " (" +
             hex_preview(std::span<const std::byte>(a).subspan(i), 4) + " vs " +
             hex_preview(std::span<const std::byte>(b).subspan(i), 4) + ")";
    }
  }
  if (a.size() != b.size()) {
    return "lengths differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  }
  return {};
}

// Compares a round trip's output `got` with the input `src` per `loss`.
AssertionResult compare_round_trip(const Lossiness& loss, const MemoryObj& src,
                                   const MemoryObj& got, QualityReport* quality) {
  const MemoryLayoutDesc& layout = src.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    DType dtype = layout.dtypes()[g];
    std::size_t es = element_size(dtype);
    auto a = src.group_bytes(g);
    auto b = got.group_bytes(g);
    if (loss.lossless && !a.empty() && std::memcmp(a.data(), b.data(), a.size()) == 0) continue;
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      const std::byte* pa = a.data() + i * es;
      const std::byte* pb = b.data() + i * es;
      double x = read_element(dtype, pa);
      double y = read_element(dtype, pb);
      if (std::isnan(x)) {
        if (!std::isnan(y)) {
          return AssertionFailure() << "round trip turned a NaN into a number: "
                                    << describe_element(layout, g, i, x, y) << where(layout);
        }
        continue;
      }
      if (loss.lossless) {
        if (std::memcmp(pa, pb, es) != 0) {
          return AssertionFailure()
                 << "round trip of a lossless serde changed "
                 << describe_element(layout, g, i, x, y) << " (bytes " << hex_preview({pa, es})
                 << " -> " << hex_preview({pb, es}) << ")" << where(layout);
        }
        continue;
      }
      if (std::isinf(x)) {
        if (y != x) {
          return AssertionFailure()
                 << "round trip did not keep an infinity: " << describe_element(layout, g, i, x, y)
                 << where(layout);
        }
        continue;
      }
      if (!std::isfinite(y)) {
        return AssertionFailure() << "round trip turned a finite value into "
                                  << (std::isnan(y) ? "NaN" : "an infinity") << ": "
                                  << describe_element(layout, g, i, x, y) << where(layout);
      }
      double err = std::fabs(x - y);
      double hard = std::max(loss.hard_abs, loss.hard_rel * std::fabs(x));
      if (err > hard) {
        return AssertionFailure() << "round trip error " << err
                                  << " exceeds the declared hard bound " << hard << " (abs "
                                  << loss.hard_abs << ", rel " << loss.hard_rel
                                  << "): " << describe_element(layout, g, i, x, y) << where(layout);
      }
      double soft = std::max(loss.soft_abs, loss.soft_rel * std::fabs(x));
      if (quality != nullptr && err > soft) {
        double ratio = soft > 0 ? err / soft : INFINITY;
        if (!quality->exceeded_soft || ratio > quality->worst_ratio) {
          quality->exceeded_soft = true;
          quality->worst_ratio = ratio;
          std::ostringstream os;
          os << "error " << err << " above the soft bound " << soft << " at "
             << describe_element(layout, g, i, x, y) << where(layout);
          quality->worst = os.str();
        }
      }
    }
  }
  return AssertionSuccess();
}

bool slot_required(const SerdeUnderTest& serde, std::size_t slot) {
  return serde.multi_required_slots.empty() || slot >= serde.multi_required_slots.size() ||
         serde.multi_required_slots[slot];
}

}  // namespace lmcache::conformance_internal
