// Serde mutants: a lossless copy serde (every dtype; the bytes of each group back to back)
// with one bug switched on per mutant. Every bug stays inside the buffers it is given, so the
// mutants run under AddressSanitizer too. (Over 600 lines: one family, every mutant beside its
// witness scenario.)
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <latch>
#include <map>
#include <mutex>
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
  // Realistic bugs.
  bool split_drops_remainder = false;  // groups >= 2^16 elements: 4 chunks of n/4 elements
  bool tail_of_one_dropped = false;    // 2-byte dtypes in 8-element blocks: a 1-element tail lost
  bool rare_block_bug = false;  // n >= 8192 and n % 4096 == 0: the last 4096-element block lost
  bool copies_physical_size = false;  // copies the source's whole buffer, padding included
  bool equal_group_offsets = false;   // group g written at g * (bytes of group 0)
  bool shared_scratch = false;        // serializes through one 4 KiB scratch for all callers
  bool estimate_cached_by_elements = false;
  bool deser_checks_physical_size = false;  // a short source is noticed only past its buffer
  bool deser_shared_scratch = false;
  bool deser_plan_by_group_count = false;  // group sizes cached per number of groups
};

std::atomic<int> g_counter{0};

// 4 KiB of scratch that several threads may write at once: atomic bytes, so the mutants that
// share it corrupt data without undefined behaviour (they also run under TSan).
class SharedScratch {
 public:
  static constexpr std::size_t kBytes = 4096;
  // Copies `n` bytes from `from` to `to` through the scratch, a chunk at a time.
  void copy(const std::byte* from, std::byte* to, std::size_t n) {
    for (std::size_t off = 0; off < n; off += kBytes) {
      const std::size_t len = std::min(kBytes, n - off);
      for (std::size_t i = 0; i < len; ++i) {
        bytes_[i].store(std::to_integer<std::uint8_t>(from[off + i]), std::memory_order_relaxed);
      }
      std::this_thread::yield();  // a real encoder would do its work here
      for (std::size_t i = 0; i < len; ++i) {
        to[off + i] = static_cast<std::byte>(bytes_[i].load(std::memory_order_relaxed));
      }
    }
  }

 private:
  std::array<std::atomic<std::uint8_t>, kBytes> bytes_{};
};

// Copies one group's bytes as the knobs say (the correct copy when none is on).
void copy_group(const CopyKnobs& k, DType dtype, std::size_t n, const std::byte* from,
                std::byte* to, SharedScratch* scratch) {
  const std::size_t es = element_size(dtype);
  std::size_t copied = n;
  if (k.tail_of_one_dropped && es == 2 && n > 8 && n % 8 == 1) copied = n - 1;
  if (k.rare_block_bug && n >= 8192 && n % 4096 == 0) copied = n - 4096;
  if (k.split_drops_remainder && n >= (std::size_t{1} << 16)) copied = (n / 4) * 4;
  if (copied == 0) return;
  if (scratch != nullptr) {
    scratch->copy(from, to, copied * es);
  } else {
    std::memcpy(to, from, copied * es);
  }
}

class CopySerializer final : public Serializer {
 public:
  explicit CopySerializer(CopyKnobs k) : k_(k) {}

  std::size_t serialize(const MemoryObj& src, MemoryObj& dst) override {
    const MemoryLayoutDesc& layout = src.layout();
    const std::size_t n = k_.copies_physical_size ? src.physical_size() : layout.total_bytes();
    const std::size_t need = n + trailer();
    if (!k_.overrun_short_buffer && dst.physical_size() < need) {
      throw std::invalid_argument("copy serde: destination buffer too small: got " +
                                  std::to_string(dst.physical_size()) + " bytes, need " +
                                  std::to_string(need));
    }
    std::byte* out = dst.data();
    if (k_.copies_physical_size) {
      if (n > 0) std::memcpy(out, src.data(), n);
    } else {
      std::size_t off = 0;
      for (std::size_t g = 0; g < layout.num_groups(); ++g) {
        auto bytes = src.group_bytes(g);
        std::size_t at = k_.equal_group_offsets ? g * layout.group_bytes(0) : off;
        if (at + bytes.size() <= dst.physical_size()) {
          copy_group(k_, layout.dtypes()[g], layout.group_elements(g), bytes.data(), out + at,
                     k_.shared_scratch ? &scratch_ : nullptr);
        }
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
    std::size_t e = layout.total_bytes() + trailer();
    if (k_.underestimate && e > 0) --e;
    if (k_.data_dependent_estimate) e += static_cast<std::size_t>(last_first_byte_.load() % 3);
    if (k_.estimate_cached_by_elements) {
      // "The estimate only depends on the element count": cached under the wrong key.
      std::lock_guard lock(mu_);
      return cache_.try_emplace(layout.total_elements(), e).first->second;
    }
    return e;
  }

 private:
  std::size_t trailer() const { return k_.nondeterministic || k_.thread_dependent ? 1 : 0; }

  CopyKnobs k_;
  std::atomic<int> inflight_{0};
  std::atomic<int> last_first_byte_{0};
  SharedScratch scratch_;
  mutable std::mutex mu_;
  mutable std::map<std::size_t, std::size_t> cache_;
};

class CopyDeserializer final : public Deserializer {
 public:
  explicit CopyDeserializer(CopyKnobs k) : k_(k) {}

  void deserialize(const MemoryObj& src, MemoryObj& dst) override {
    const MemoryLayoutDesc& layout = dst.layout();
    const std::size_t need = layout.total_bytes();
    const std::size_t have = k_.deser_checks_physical_size ? src.physical_size() : src.size();
    if (!k_.deser_no_short_check && have < need) {
      throw std::invalid_argument("copy serde: source buffer too small: got " +
                                  std::to_string(have) + " bytes, need " + std::to_string(need));
    }
    const std::size_t readable = std::min(src.physical_size(), need);
    if (k_.deser_plan_by_group_count) {
      // Group sizes are remembered per number of groups, from the first layout seen.
      std::vector<std::size_t> plan;
      {
        std::lock_guard lock(mu_);
        std::vector<std::size_t> sizes;
        for (std::size_t g = 0; g < layout.num_groups(); ++g)
          sizes.push_back(layout.group_bytes(g));
        plan = plans_.try_emplace(layout.num_groups(), sizes).first->second;
      }
      std::size_t off = 0;
      for (std::size_t g = 0; g < layout.num_groups(); ++g) {
        auto to = dst.group_bytes(g);
        const std::size_t len =
            std::min({plan[g], to.size(), off < readable ? readable - off : std::size_t{0}});
        if (len > 0) std::memcpy(to.data(), src.data() + off, len);
        off += plan[g];
      }
    } else if (readable > 0) {
      if (k_.deser_shared_scratch) {
        scratch_.copy(src.data(), dst.data(), readable);
      } else {
        std::memcpy(dst.data(), src.data(), readable);
      }
    }
    if (k_.deser_writes_past_dst) dst.data()[dst.physical_size()] = std::byte{0x5A};
  }

 private:
  CopyKnobs k_;
  SharedScratch scratch_;
  std::mutex mu_;
  std::map<std::size_t, std::vector<std::size_t>> plans_;
};

SerdeUnderTest make_copy(CopyKnobs k) {
  SerdeUnderTest s;
  s.name = "copy_serde";
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

// ---------------------------------------------------------------------------------------------
// Witness scenarios: plain calls on the serde, independent of the kit's properties.

MemoryObjPtr filled(const MemoryLayoutDesc& layout, std::uint64_t seed, std::size_t slack = 0) {
  MemoryObjPtr o = MemoryObj::allocate(layout, layout.total_bytes() + slack);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : o->physical_bytes()) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  return o;
}

MemoryObjPtr bytes_of(std::size_t n) {
  return MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
}

std::string what(const std::exception& e) { return e.what(); }

// Serializes `src` into an estimate-sized buffer, narrows it and deserializes it back: "" when
// the layout's bytes come back exactly.
std::string round_trip_problem(const SerdeUnderTest& s, const MemoryObj& src) {
  try {
    SerializerPtr ser = s.make_serializer();
    MemoryObjPtr bytes = bytes_of(ser->estimate_serialized_size(src.layout()));
    bytes->set_used_size(ser->serialize(src, *bytes));
    MemoryObjPtr out = MemoryObj::allocate(src.layout());
    s.make_deserializer()->deserialize(*bytes, *out);
    const std::size_t n = src.layout().total_bytes();
    if (n > 0 && std::memcmp(out->data(), src.data(), n) != 0) {
      return "the round trip of " + src.layout().to_string() + " changed the data";
    }
  } catch (const std::exception& e) {
    return "the round trip of " + src.layout().to_string() + " threw: " + what(e);
  }
  return {};
}

std::string round_trip_problem(const SerdeUnderTest& s, const MemoryLayoutDesc& layout) {
  return round_trip_problem(s, *filled(layout, 3));
}

// Threads sharing one serializer and one deserializer each round-trip their own input.
std::string shared_round_trip_problem(const SerdeUnderTest& s) {
  SerializerPtr ser = s.make_serializer();
  DeserializerPtr deser = s.make_deserializer();
  constexpr int kThreads = 4;
  std::vector<std::string> errors(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      const MemoryLayoutDesc layout = MemoryLayoutDesc::single({20000 + t}, DType::kUInt8);
      MemoryObjPtr src = filled(layout, 100 + static_cast<std::uint64_t>(t));
      start.arrive_and_wait();
      for (int r = 0; r < 20 && errors[static_cast<std::size_t>(t)].empty(); ++r) {
        MemoryObjPtr bytes = bytes_of(ser->estimate_serialized_size(layout));
        bytes->set_used_size(ser->serialize(*src, *bytes));
        if (std::memcmp(bytes->data(), src->data(), layout.total_bytes()) != 0) {
          errors[static_cast<std::size_t>(t)] =
              "a serialize on a shared instance got another "
              "thread's bytes";
          break;
        }
        MemoryObjPtr out = MemoryObj::allocate(layout);
        deser->deserialize(*bytes, *out);
        if (std::memcmp(out->data(), src->data(), layout.total_bytes()) != 0) {
          errors[static_cast<std::size_t>(t)] =
              "a deserialize on a shared instance got another "
              "thread's bytes";
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

Impl copy_impl(CopyKnobs k) {
  Impl i;
  i.serde = make_copy(k);
  return i;
}

void add(std::vector<Mutant>& out, std::string name, BugClass c, std::string property,
         std::string bug, Impl impl, std::function<std::string(const Impl&)> witness,
         Status expected = Status::kFail, Impl base = copy_impl({})) {
  out.push_back(mutant(std::move(name), ImplementationKind::kSerde, c, std::move(property),
                       std::move(bug), std::move(impl), std::move(base), std::move(witness),
                       expected));
}

const MemoryLayoutDesc kSmall = MemoryLayoutDesc::single({3, 5}, DType::kFloat32);

}  // namespace

SerdeUnderTest copy_serde() { return make_copy({}); }

void add_serde_mutants(std::vector<Mutant>& out) {
  // One per property.
  add(out, "nondeterministic_output", BugClass::kState, "DeterministicOutput",
      "a trailing byte from a counter kept across calls", copy_impl({.nondeterministic = true}),
      [](const Impl& i) -> std::string {
        SerializerPtr s = i.serde.make_serializer();
        MemoryObjPtr src = filled(kSmall, 1), a = bytes_of(64), b = bytes_of(64);
        std::size_t na = s->serialize(*src, *a), nb = s->serialize(*src, *b);
        if (na != nb || std::memcmp(a->data(), b->data(), na) != 0) return "two calls differ";
        return {};
      });
  add(out, "thread_dependent_output", BugClass::kConcurrency, "DeterministicAcrossThreads",
      "a trailing byte that counts the callers in flight", copy_impl({.thread_dependent = true}),
      [](const Impl& i) -> std::string {
        SerializerPtr s = i.serde.make_serializer();
        MemoryObjPtr src = filled(kSmall, 1);
        std::vector<std::vector<std::byte>> outs(4);
        std::latch start(4);
        std::vector<std::thread> pool;
        for (int t = 0; t < 4; ++t) {
          pool.emplace_back([&, t] {
            MemoryObjPtr d = bytes_of(64);
            start.arrive_and_wait();
            std::size_t n = s->serialize(*src, *d);
            outs[static_cast<std::size_t>(t)].assign(d->data(), d->data() + n);
          });
        }
        for (auto& th : pool) th.join();
        MemoryObjPtr alone = bytes_of(64);
        std::size_t n = s->serialize(*src, *alone);
        for (auto& o : outs) {
          if (o != std::vector<std::byte>(alone->data(), alone->data() + n)) {
            return "four threads got other bytes than one thread alone";
          }
        }
        return {};
      });
  add(out, "under_estimate", BugClass::kSizes, "EstimateIsUpperBound", "estimate one byte short",
      copy_impl({.underestimate = true}), [](const Impl& i) -> std::string {
        SerializerPtr s = i.serde.make_serializer();
        MemoryObjPtr d = bytes_of(64);
        if (s->serialize(*filled(kSmall, 1), *d) > s->estimate_serialized_size(kSmall)) {
          return "serialize wrote more than the estimate";
        }
        return {};
      });
  add(out, "data_dependent_estimate", BugClass::kState, "EstimateDependsOnLayoutOnly",
      "the estimate depends on the last data serialized",
      copy_impl({.data_dependent_estimate = true}), [](const Impl& i) -> std::string {
        SerializerPtr s = i.serde.make_serializer();
        std::size_t before = s->estimate_serialized_size(kSmall);
        for (std::uint64_t seed = 1; seed < 8; ++seed) {
          MemoryObjPtr d = bytes_of(128);
          s->serialize(*filled(kSmall, seed), *d);
          if (s->estimate_serialized_size(kSmall) != before) return "the estimate moved";
        }
        return {};
      });
  add(out, "lossy_but_declared_lossless", BugClass::kData, "RoundTrip",
      "clears bit 0 of every byte while declaring itself lossless",
      copy_impl({.drops_low_bits = true}),
      [](const Impl& i) { return round_trip_problem(i.serde, kSmall); });
  {
    // Within a hard bound of 2^-8 but far above the soft bound of 2^-20: a QualityWarning.
    auto truncating = [](double hard_rel) {
      Impl i = copy_impl({.truncate_f32_bits = 12});
      i.serde.input_dtypes = {DType::kFloat32};
      i.serde.lossiness = Lossiness::Bounded(1e-37, hard_rel, 0.0, std::ldexp(1.0, -20));
      return i;
    };
    auto relative_error = [](const Impl& i, double bound) -> std::string {
      MemoryObjPtr src = MemoryObj::allocate(MemoryLayoutDesc::single({1}, DType::kFloat32));
      const float x = 1.0f + std::ldexp(1.0f, -12);
      std::memcpy(src->data(), &x, 4);
      MemoryObjPtr bytes = bytes_of(16);
      bytes->set_used_size(i.serde.make_serializer()->serialize(*src, *bytes));
      MemoryObjPtr out = MemoryObj::allocate(src->layout());
      i.serde.make_deserializer()->deserialize(*bytes, *out);
      float y;
      std::memcpy(&y, out->data(), 4);
      if (std::fabs(x - y) / x > bound)
        return "1 + 2^-12 came back with a relative error above the bound";
      return {};
    };
    Impl base = truncating(1.0);
    base.serde.make_serializer = copy_serde().make_serializer;
    add(
        out, "above_soft_error_bound", BugClass::kData, "RoundTrip",
        "loses 12 mantissa bits where it declares a soft bound of 2^-20",
        truncating(std::ldexp(1.0, -8)),
        [relative_error](const Impl& i) { return relative_error(i, std::ldexp(1.0, -20)); },
        Status::kQualityWarning, base);
    add(
        out, "above_hard_error_bound", BugClass::kData, "RoundTrip",
        "loses 12 mantissa bits where it declares a hard bound of 2^-16",
        truncating(std::ldexp(1.0, -16)),
        [relative_error](const Impl& i) { return relative_error(i, std::ldexp(1.0, -16)); },
        Status::kFail, base);
  }
  add(out, "writes_past_count", BugClass::kSizes, "BytesPastCountUntouched",
      "touches the byte after the count it returns", copy_impl({.write_past_count = true}),
      [](const Impl& i) -> std::string {
        MemoryObjPtr d = bytes_of(100);
        std::memset(d->data(), 0x11, 100);
        std::size_t n = i.serde.make_serializer()->serialize(*filled(kSmall, 1), *d);
        if (d->data()[n] != std::byte{0x11}) return "the byte past the count changed";
        return {};
      });
  add(out, "overruns_short_buffer", BugClass::kFailureOrder, "ShortBufferRejected",
      "never checks the destination's size", copy_impl({.overrun_short_buffer = true}),
      [](const Impl& i) -> std::string {
        MemoryObjPtr big = bytes_of(200);
        MemoryObj short_dst(std::shared_ptr<void>(big, big->data()), big->data(), 10,
                            MemoryLayoutDesc::single({10}, DType::kUInt8));
        try {
          i.serde.make_serializer()->serialize(*filled(kSmall, 1), short_dst);
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a 10-byte destination for 60 bytes was accepted";
      });
  add(out, "deserialize_writes_past_destination", BugClass::kSizes,
      "DeserializeWritesOnlyDestination", "writes one byte past the destination",
      copy_impl({.deser_writes_past_dst = true}), [](const Impl& i) -> std::string {
        MemoryObjPtr big = bytes_of(61);
        std::memset(big->data(), 0x11, 61);
        MemoryObj dst(std::shared_ptr<void>(big, big->data()), big->data(), 60, kSmall);
        MemoryObjPtr src = filled(kSmall, 1);
        MemoryObjPtr bytes = bytes_of(60);
        std::memcpy(bytes->data(), src->data(), 60);
        i.serde.make_deserializer()->deserialize(*bytes, dst);
        if (big->data()[60] != std::byte{0x11}) return "the byte past the destination changed";
        return {};
      });
  add(out, "accepts_short_source", BugClass::kFailureOrder, "ShortSourceRejected",
      "does not check the source's length", copy_impl({.deser_no_short_check = true}),
      [](const Impl& i) -> std::string {
        MemoryObjPtr out = MemoryObj::allocate(kSmall);
        try {
          i.serde.make_deserializer()->deserialize(*bytes_of(10), *out);
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a 10-byte source for 60 bytes was accepted";
      });
  {
    Impl i = copy_impl({});
    i.serde.input_dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};  // copies anything
    Impl base = i;
    base.serde.make_serializer = [] {
      struct Checking final : Serializer {
        std::size_t serialize(const MemoryObj& src, MemoryObj& dst) override {
          for (DType d : src.layout().dtypes()) {
            if (d == DType::kUInt8 || d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2) {
              throw std::invalid_argument("unsupported dtype");
            }
          }
          return inner.serialize(src, dst);
        }
        std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
          return inner.estimate_serialized_size(l);
        }
        CopySerializer inner{CopyKnobs{}};
      };
      return std::make_shared<Checking>();
    };
    add(
        out, "accepts_undeclared_dtype", BugClass::kFailureOrder, "UnsupportedInputRejected",
        "declares three float dtypes and copies any", i,
        [](const Impl& impl) -> std::string {
          MemoryObjPtr d = bytes_of(64);
          try {
            impl.serde.make_serializer()->serialize(
                *filled(MemoryLayoutDesc::single({4}, DType::kUInt8), 1), *d);
          } catch (const std::invalid_argument&) {
            return {};
          }
          return "a uint8 source was accepted";
        },
        Status::kFail, base);
  }
  {
    Impl i = copy_impl({});
    i.serde.make_multi_deserializer = [] {
      return std::make_shared<TouchesNoneBridge>(std::make_shared<CopyDeserializer>(CopyKnobs{}));
    };
    add(out, "bridge_touches_none_slot", BugClass::kFailureOrder, "MultiNoneSlotRules",
        "decodes the source even for a None destination slot", i,
        [](const Impl& impl) -> std::string {
          auto md = impl.serde.make_multi_deserializer
                        ? impl.serde.make_multi_deserializer()
                        : single_to_multi_deserializer(impl.serde.make_deserializer());
          try {
            md->deserialize(*bytes_of(0), {nullptr});
          } catch (const std::exception& e) {
            return std::string("a None slot read the source: ") + e.what();
          }
          return {};
        });
  }
  {
    Impl i = copy_impl({});
    i.serde.make_multi_serializer = [] {
      return std::make_shared<HeaderBridge>(std::make_shared<CopySerializer>(CopyKnobs{}));
    };
    add(out, "bridge_adds_header", BugClass::kData, "BridgeEquivalence",
        "the length-1 bridge prefixes a version byte", i, [](const Impl& impl) -> std::string {
          auto ms = impl.serde.make_multi_serializer
                        ? impl.serde.make_multi_serializer()
                        : single_to_multi_serializer(impl.serde.make_serializer());
          MemoryObjPtr src = filled(kSmall, 1), a = bytes_of(64), b = bytes_of(64);
          std::size_t na = ms->serialize({src}, *a);
          std::size_t nb = impl.serde.make_serializer()->serialize(*src, *b);
          if (na != nb || std::memcmp(a->data(), b->data(), na) != 0) {
            return "the bridge's bytes differ from a direct call";
          }
          return {};
        });
  }

  // Realistic bugs.
  add(out, "large_group_split_drops_remainder", BugClass::kSizes, "RoundTrip",
      "groups of 2^16 elements and more are copied in four chunks of n/4 elements, the last "
      "n % 4 elements are lost",
      copy_impl({.split_drops_remainder = true}), [](const Impl& i) {
        return round_trip_problem(i.serde, MemoryLayoutDesc::single({65539}, DType::kFloat32));
      });
  add(out, "simd_tail_of_one_dropped", BugClass::kSizes, "RoundTrip",
      "16-bit groups go through 8-element blocks; a tail of exactly one element is lost",
      copy_impl({.tail_of_one_dropped = true}), [](const Impl& i) {
        return round_trip_problem(i.serde, MemoryLayoutDesc::single({17}, DType::kBFloat16));
      });
  add(out, "deserialize_reads_physical_size", BugClass::kSizes, "ShortSourceRejected",
      "checks the source's buffer size instead of its narrowed size()",
      copy_impl({.deser_checks_physical_size = true}), [](const Impl& i) -> std::string {
        MemoryObjPtr bytes = bytes_of(60);
        bytes->set_used_size(30);  // narrowed: only 30 valid bytes
        try {
          i.serde.make_deserializer()->deserialize(*bytes, *MemoryObj::allocate(kSmall));
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a source narrowed to 30 of 60 needed bytes was accepted";
      });
  add(out, "serialize_copies_source_padding", BugClass::kSizes, "EstimateIsUpperBound",
      "copies the source's whole buffer, padding past the layout included",
      copy_impl({.copies_physical_size = true}), [](const Impl& i) -> std::string {
        SerializerPtr s = i.serde.make_serializer();
        MemoryObjPtr src = filled(kSmall, 1, /*slack=*/8);
        MemoryObjPtr d = bytes_of(200);
        if (s->serialize(*src, *d) > s->estimate_serialized_size(kSmall)) {
          return "serialize of an object with padding wrote more than the estimate";
        }
        return {};
      });
  add(out, "group_offset_assumes_equal_groups", BugClass::kSizes, "RoundTrip",
      "writes group g at g times the size of group 0", copy_impl({.equal_group_offsets = true}),
      [](const Impl& i) {
        return round_trip_problem(
            i.serde,
            MemoryLayoutDesc({{3}, {5}, {2}}, {DType::kFloat32, DType::kFloat32, DType::kFloat32}));
      });
  add(out, "shared_scratch_serialize", BugClass::kConcurrency, "DeterministicAcrossThreads",
      "serializes through one 4 KiB scratch buffer shared by every caller",
      copy_impl({.shared_scratch = true}),
      [](const Impl& i) { return shared_round_trip_problem(i.serde); });
  add(out, "shared_scratch_deserialize", BugClass::kConcurrency, "ConcurrentRoundTrips",
      "deserializes through one 4 KiB scratch buffer shared by every caller",
      copy_impl({.deser_shared_scratch = true}),
      [](const Impl& i) { return shared_round_trip_problem(i.serde); });
  add(out, "estimate_cached_by_element_count", BugClass::kState, "OneInstanceManyLayouts",
      "caches estimates under the element count, so a float32 layout gets the estimate of a "
      "bfloat16 one of the same count",
      copy_impl({.estimate_cached_by_elements = true}), [](const Impl& i) -> std::string {
        SerializerPtr s = i.serde.make_serializer();
        s->estimate_serialized_size(MemoryLayoutDesc::single({8}, DType::kBFloat16));
        const MemoryLayoutDesc f32 = MemoryLayoutDesc::single({8}, DType::kFloat32);
        if (s->estimate_serialized_size(f32) < f32.total_bytes()) {
          return "after estimating 8 bfloat16 elements, the estimate for 8 float32 elements is "
                 "too small";
        }
        return {};
      });
  add(out, "decode_plan_cached_by_group_count", BugClass::kState, "OneInstanceManyLayouts",
      "remembers group sizes per number of groups, from the first layout seen",
      copy_impl({.deser_plan_by_group_count = true}), [](const Impl& i) -> std::string {
        DeserializerPtr d = i.serde.make_deserializer();
        const MemoryLayoutDesc a({{4}, {4}}, {DType::kFloat32, DType::kFloat32});
        const MemoryLayoutDesc b({{2}, {6}}, {DType::kFloat32, DType::kFloat32});
        for (const auto& layout : {a, b}) {
          MemoryObjPtr src = filled(layout, 5);
          MemoryObjPtr bytes = bytes_of(layout.total_bytes());
          std::memcpy(bytes->data(), src->data(), layout.total_bytes());
          MemoryObjPtr out = MemoryObj::allocate(layout);
          d->deserialize(*bytes, *out);
          if (std::memcmp(out->data(), src->data(), layout.total_bytes()) != 0) {
            return "one instance decoded " + layout.to_string() + " wrongly after another layout";
          }
        }
        return {};
      });
  add(out, "rare_block_multiple_bug", BugClass::kLuck, "RoundTrip",
      "a group whose element count is a multiple of 4096 (from 8192 on) loses its last "
      "4096-element block: only boundary sizes find it",
      copy_impl({.rare_block_bug = true}), [](const Impl& i) {
        return round_trip_problem(i.serde, MemoryLayoutDesc::single({2, 4096}, DType::kUInt8));
      });
}

}  // namespace lmcache::conformance::selftest
