// Serde mutants: a lossless copy serde (every dtype; the bytes of each group back to back) with
// one rule broken per mutant.
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "lmcache/serde/multi_serde.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

struct CopyKnobs {
  bool nondeterministic = false;  // a trailing byte from a global counter
  bool thread_dependent = false;  // a trailing byte = callers in flight
  bool underestimate = false;     // estimate one byte short
  bool data_dependent_estimate = false;
  bool drops_low_bits = false;        // clears bit 0 of every byte, yet claims lossless
  int truncate_f32_bits = 0;          // clears the low mantissa bits of float32 elements
  bool write_past_count = false;      // touches the byte after the count
  bool overrun_short_buffer = false;  // never checks the destination size
  bool deser_writes_past_dst = false;
  bool deser_no_short_check = false;
};

std::atomic<int> g_counter{0};

class CopySerializer final : public Serializer {
 public:
  explicit CopySerializer(CopyKnobs k) : k_(k) {}

  std::size_t serialize(const MemoryObj& src, MemoryObj& dst) override {
    const MemoryLayoutDesc& layout = src.layout();
    const std::size_t n = layout.total_bytes();
    const std::size_t need = n + Trailer();
    if (!k_.overrun_short_buffer && dst.physical_size() < need) {
      throw std::invalid_argument("copy serde: destination buffer too small: got " +
                                  std::to_string(dst.physical_size()) + " bytes, need " +
                                  std::to_string(need));
    }
    std::byte* out = dst.data();
    std::size_t off = 0;
    for (std::size_t g = 0; g < layout.num_groups(); ++g) {
      auto bytes = src.group_bytes(g);
      if (!bytes.empty()) std::memcpy(out + off, bytes.data(), bytes.size());
      if (k_.truncate_f32_bits > 0 && layout.dtypes()[g] == DType::kFloat32) {
        const std::uint32_t mask = ~((1u << k_.truncate_f32_bits) - 1u);
        for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
          std::uint32_t v;
          std::memcpy(&v, out + off + i, 4);
          v &= mask;
          std::memcpy(out + off + i, &v, 4);
        }
      }
      off += bytes.size();
    }
    if (k_.drops_low_bits) {
      for (std::size_t i = 0; i < n; ++i) out[i] &= std::byte{0xFE};
    }
    if (k_.nondeterministic) out[n] = static_cast<std::byte>(g_counter.fetch_add(1));
    if (k_.thread_dependent) {
      int now = inflight_.fetch_add(1) + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      int later = inflight_.load();
      inflight_.fetch_sub(1);
      out[n] = static_cast<std::byte>(std::max(now, later));
    }
    if (k_.write_past_count && dst.physical_size() > need) out[need] = ~out[need];
    last_first_byte_ = n > 0 ? std::to_integer<int>(out[0]) : 0;
    return need;
  }

  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    std::size_t e = layout.total_bytes() + Trailer();
    if (k_.underestimate && e > 0) --e;
    if (k_.data_dependent_estimate) e += static_cast<std::size_t>(last_first_byte_.load() % 3);
    return e;
  }

 private:
  std::size_t Trailer() const { return k_.nondeterministic || k_.thread_dependent ? 1 : 0; }

  CopyKnobs k_;
  std::atomic<int> inflight_{0};
  std::atomic<int> last_first_byte_{0};
};

class CopyDeserializer final : public Deserializer {
 public:
  explicit CopyDeserializer(CopyKnobs k) : k_(k) {}

  void deserialize(const MemoryObj& src, MemoryObj& dst) override {
    const std::size_t need = dst.layout().total_bytes();
    if (!k_.deser_no_short_check && src.size() < need) {
      throw std::invalid_argument("copy serde: source buffer too small: got " +
                                  std::to_string(src.size()) + " bytes, need " +
                                  std::to_string(need));
    }
    const std::size_t n = std::min(src.size(), need);
    if (n > 0) std::memcpy(dst.data(), src.data(), n);
    if (k_.deser_writes_past_dst) dst.data()[dst.physical_size()] = std::byte{0x5A};
  }

 private:
  CopyKnobs k_;
};

SerdeUnderTest MakeCopy(std::string name, CopyKnobs k) {
  SerdeUnderTest s;
  s.name = std::move(name);
  s.make_serializer = [k] { return std::make_shared<CopySerializer>(k); };
  s.make_deserializer = [k] { return std::make_shared<CopyDeserializer>(k); };
  s.input_dtypes.assign(all_dtypes().begin(), all_dtypes().end());
  return s;
}

// A length-1 bridge that, for a None destination slot, still decodes the source into scratch.
class TouchesNoneBridge final : public MultiDeserializer {
 public:
  explicit TouchesNoneBridge(DeserializerPtr inner) : inner_(std::move(inner)) {}
  std::size_t group_size() const override { return 1; }
  void deserialize(const MemoryObj& src, const MemoryObjGroup& dst) override {
    validate_group_size(dst.size(), 1, "dst");
    if (!dst[0]) {
      MemoryObjPtr scratch = MemoryObj::allocate(MemoryLayoutDesc::single({1}, DType::kUInt8));
      inner_->deserialize(src, *scratch);
      return;
    }
    inner_->deserialize(src, *dst[0]);
  }

 private:
  DeserializerPtr inner_;
};

// A length-1 bridge that prefixes a version byte: not byte-identical to a direct call.
class HeaderBridge final : public MultiSerializer {
 public:
  explicit HeaderBridge(SerializerPtr inner) : inner_(std::move(inner)) {}
  std::size_t group_size() const override { return 1; }
  std::size_t serialize(const MemoryObjGroup& src, MemoryObj& dst) override {
    validate_group_size(src.size(), 1, "src");
    if (!src[0]) throw std::invalid_argument("header bridge: None src slot");
    std::size_t est = inner_->estimate_serialized_size(src[0]->layout());
    MemoryObjPtr tmp = MemoryObj::allocate(
        MemoryLayoutDesc::single({static_cast<std::int64_t>(est)}, DType::kUInt8));
    std::size_t n = inner_->serialize(*src[0], *tmp);
    if (dst.physical_size() < n + 1) throw std::invalid_argument("header bridge: short dst");
    dst.data()[0] = std::byte{0x42};
    if (n > 0) std::memcpy(dst.data() + 1, tmp->data(), n);
    return n + 1;
  }
  std::size_t estimate_serialized_size(const LayoutDescGroup& layouts) const override {
    validate_group_size(layouts.size(), 1, "layout");
    if (!layouts[0]) throw std::invalid_argument("header bridge: None layout");
    return inner_->estimate_serialized_size(*layouts[0]) + 1;
  }

 private:
  SerializerPtr inner_;
};

Mutant SerdeMutant(std::string name, std::string property, SerdeUnderTest s,
                   Status expected = Status::kFail) {
  Mutant m;
  m.name = name;
  m.kind = ImplementationKind::kSerde;
  m.property = std::move(property);
  m.expected = expected;
  s.name = std::move(name);
  m.serde = std::move(s);
  return m;
}

}  // namespace

SerdeUnderTest CopySerde() { return MakeCopy("copy_serde", {}); }

void AddSerdeMutants(std::vector<Mutant>& out) {
  out.push_back(SerdeMutant("nondeterministic_output", "DeterministicOutput",
                            MakeCopy("", {.nondeterministic = true})));
  out.push_back(SerdeMutant("thread_dependent_output", "DeterministicAcrossThreads",
                            MakeCopy("", {.thread_dependent = true})));
  out.push_back(
      SerdeMutant("under_estimate", "EstimateIsUpperBound", MakeCopy("", {.underestimate = true})));
  out.push_back(SerdeMutant("data_dependent_estimate", "EstimateDependsOnLayoutOnly",
                            MakeCopy("", {.data_dependent_estimate = true})));
  out.push_back(SerdeMutant("lossy_but_declared_lossless", "RoundTrip",
                            MakeCopy("", {.drops_low_bits = true})));
  {
    // Within a hard bound of 2^-8 but far above the soft bound of 2^-20: a QualityWarning.
    SerdeUnderTest s = MakeCopy("", {.truncate_f32_bits = 12});
    s.input_dtypes = {DType::kFloat32};
    s.lossiness = Lossiness::Bounded(1e-37, std::ldexp(1.0, -8), 0.0, std::ldexp(1.0, -20));
    out.push_back(SerdeMutant("above_soft_error_bound", "RoundTrip", s, Status::kQualityWarning));
    s.lossiness = Lossiness::Bounded(1e-37, std::ldexp(1.0, -16), 0.0, std::ldexp(1.0, -20));
    out.push_back(SerdeMutant("above_hard_error_bound", "RoundTrip", s));
  }
  out.push_back(SerdeMutant("writes_past_count", "BytesPastCountUntouched",
                            MakeCopy("", {.write_past_count = true})));
  out.push_back(SerdeMutant("overruns_short_buffer", "ShortBufferRejected",
                            MakeCopy("", {.overrun_short_buffer = true})));
  out.push_back(SerdeMutant("deserialize_writes_past_destination",
                            "DeserializeWritesOnlyDestination",
                            MakeCopy("", {.deser_writes_past_dst = true})));
  out.push_back(SerdeMutant("accepts_short_source", "ShortSourceRejected",
                            MakeCopy("", {.deser_no_short_check = true})));
  {
    SerdeUnderTest s = MakeCopy("", {});
    s.input_dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};  // but copies anything
    out.push_back(SerdeMutant("accepts_undeclared_dtype", "UnsupportedInputRejected", s));
  }
  {
    SerdeUnderTest s = MakeCopy("", {});
    s.make_multi_deserializer = [] {
      return std::make_shared<TouchesNoneBridge>(std::make_shared<CopyDeserializer>(CopyKnobs{}));
    };
    out.push_back(SerdeMutant("bridge_touches_none_slot", "MultiNoneSlotRules", s));
  }
  {
    SerdeUnderTest s = MakeCopy("", {});
    s.make_multi_serializer = [] {
      return std::make_shared<HeaderBridge>(std::make_shared<CopySerializer>(CopyKnobs{}));
    };
    out.push_back(SerdeMutant("bridge_adds_header", "BridgeEquivalence", s));
  }
}

}  // namespace lmcache::conformance::selftest
