// serde_frame_fuzzer: the built-in deserializers over arbitrary stored bytes.
//
// What L2 gives back is untrusted: a disk or a server may return any bytes, of any length, for a
// key. Each input is one load: a built-in serde (built by make_serde_pair() from its config, as
// the registry builds it; encrypt among them), the destination's layout, the object's key, how the
// source buffer is laid out, and the frame. Beyond ASan and UBSan, it checks what docs/serde.md and
// docs/integrity.md promise:
//   - a failure is std::invalid_argument (a short or mismatching source; the destination is
//     untouched) or, from an integrity serde only, std::runtime_error; a frame shorter than the
//     serde's exact size for the layout is always invalid_argument;
//   - the source is never written, and a narrowed source reads as its logical prefix alone;
//   - a success is right: fp8 decodes as the scalar reference codec (reference/lmcache/fp8) does
//     and fails exactly when its rules say; checksum copies the payload of a frame its
//     serializer writes, and rejects only frames it does not; aesgcm's plaintext encrypts back to
//     the frame under the frame's IV.
//
// Input (fuzz/tools/make_seeds.py writes it): serde index, layout (group count, then per group
// dtype, rank, dims), key (chunk-hash length and bytes, cache-salt index), source mode and its
// parameter, then the frame.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/fuzz/fuzz_support.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/checksum_serde.h"

namespace lmcache::fuzz_internal {
namespace {

enum class Kind { kFp8, kChecksum, kAesGcm, kChain };

struct Serde {
  std::string name;
  Kind kind;
  Fp8Format fp8 = Fp8Format::kE4M3FN;  // kFp8
  bool integrity = false;              // may throw std::runtime_error
  ChainStage pair;
};

// The serdes the registry builds, from their configs; aesgcm with the fixed test key
// (fuzz/testdata/aesgcm_test.key), never a real one.
const std::vector<Serde>& serdes() {
  static const std::vector<Serde> all = [] {
    const std::string key = std::string(LMCACHE_FUZZ_TESTDATA_DIR) + "/aesgcm_test.key";
    const Json aes128 = {{"type", "aesgcm"}, {"aes_bits", 128}, {"master_key_path", key}};
    const Json aes256 = {{"type", "aesgcm"}, {"aes_bits", 256}, {"master_key_path", key}};
    Json aes256_bound = aes256;
    aes256_bound["bind_key"] = true;
    const Json fp8_e5m2 = {{"type", "fp8"}, {"fp8_dtype", "float8_e5m2"}};
    const Json checksum = {{"type", "checksum"}};
    std::vector<Serde> out;
    auto add = [&](std::string name, Kind kind, bool integrity, const Json& config,
                   Fp8Format fp8 = Fp8Format::kE4M3FN) {
      out.push_back(Serde{std::move(name), kind, fp8, integrity, make_serde_pair(config)});
    };
    // The order is the input's serde index (make_seeds.py SERDES).
    add("fp8_e4m3", Kind::kFp8, false, {{"type", "fp8"}});
    add("fp8_e5m2", Kind::kFp8, false, fp8_e5m2, Fp8Format::kE5M2);
    add("checksum", Kind::kChecksum, true, checksum);
    add("aesgcm128", Kind::kAesGcm, true, aes128);
    add("aesgcm256", Kind::kAesGcm, true, aes256);
    add("aesgcm256_bound", Kind::kAesGcm, true, aes256_bound);
    add("chain_fp8_checksum", Kind::kChain, true,
        {{"type", "chain"}, {"stages", {{{"type", "fp8"}}, checksum}}});
    add("chain_fp8e5m2_aesgcm128", Kind::kChain, true,
        {{"type", "chain"}, {"stages", {fp8_e5m2, aes128}}});
    add("chain_checksum_aesgcm256", Kind::kChain, true,
        {{"type", "chain"}, {"stages", {checksum, aes256}}});
    // LMCache's "encrypt": aesgcm's frame under its own HKDF label.
    add("encrypt128", Kind::kAesGcm, true,
        {{"type", "encrypt"}, {"aes_bits", 128}, {"master_key_path", key}});
    add("encrypt256", Kind::kAesGcm, true,
        {{"type", "encrypt"}, {"aes_bits", 256}, {"master_key_path", key}});
    return out;
  }();
  return all;
}

constexpr std::byte kCanary{0xA5};

// A MemoryObj over a heap buffer of exactly `physical` bytes, so that ASan sees any access past
// it (the host buffer pool rounds to pages).
MemoryObjPtr exact_object(std::size_t physical, MemoryLayoutDesc layout, std::byte fill) {
  std::shared_ptr<std::byte[]> mem(new std::byte[physical]);
  std::fill_n(mem.get(), physical, fill);
  std::byte* data = mem.get();
  return std::make_shared<MemoryObj>(std::move(mem), data, physical, std::move(layout));
}

MemoryObjPtr object_of(std::span<const std::uint8_t> bytes, MemoryLayoutDesc layout) {
  MemoryObjPtr obj = exact_object(bytes.size(), std::move(layout), std::byte{0});
  if (!bytes.empty()) std::memcpy(obj->data(), bytes.data(), bytes.size());
  return obj;
}

MemoryLayoutDesc byte_layout(std::size_t n) {
  return MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8);
}

bool all_bytes(const MemoryObj& obj, std::byte value) {
  const auto b = obj.physical_bytes();
  return std::all_of(b.begin(), b.end(), [&](std::byte x) { return x == value; });
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::uint8_t> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

enum class Outcome { kOk, kInvalidArgument, kRuntimeError };

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "success";
    case Outcome::kInvalidArgument:
      return "std::invalid_argument";
    case Outcome::kRuntimeError:
      return "std::runtime_error";
  }
  return "?";
}

// One deserialize(); any exception but the two documented types is a failure here.
Outcome run(const Serde& s, const MemoryObj& src, MemoryObj& dst, const ObjectKey& key,
            std::string* what) {
  try {
    s.pair.deserializer->deserialize(src, dst, key);
    return Outcome::kOk;
  } catch (const std::invalid_argument& e) {
    *what = e.what();
    return Outcome::kInvalidArgument;
  } catch (const std::logic_error&) {
    LMCACHE_FUZZ_FAIL(s.name + " threw " + describe_current_exception());
  } catch (const std::runtime_error& e) {
    LMCACHE_FUZZ_CHECK(s.integrity,
                       s.name + " (no integrity check) threw " + describe_current_exception());
    *what = e.what();
    return Outcome::kRuntimeError;
  } catch (...) {
    LMCACHE_FUZZ_FAIL(s.name + " threw " + describe_current_exception());
  }
}

// fp8's rules (lmcache/serde/fp8_serde.h): float destination groups; a source of uint8 groups,
// or of this format's fp8 groups matching the destination's element counts; enough bytes.
bool fp8_accepts(const MemoryLayoutDesc& src, std::size_t src_size, const MemoryLayoutDesc& dst,
                 Fp8Format format) {
  for (DType d : dst.dtypes()) {
    if (d != DType::kFloat32 && d != DType::kFloat16 && d != DType::kBFloat16) return false;
  }
  if (!src.empty()) {
    const DType first = src.dtypes()[0];
    if (first != DType::kUInt8 && first != fp8_dtype(format)) return false;
    for (DType d : src.dtypes()) {
      if (d != first) return false;
    }
    if (first != DType::kUInt8) {
      if (src.num_groups() != dst.num_groups()) return false;
      for (std::size_t g = 0; g < src.num_groups(); ++g) {
        if (src.group_elements(g) != dst.group_elements(g)) return false;
      }
    }
  }
  return src_size >= dst.total_elements();
}

// What a success must have produced.
void check_success(const Serde& s, std::span<const std::uint8_t> frame, const MemoryObj& dst,
                   const ObjectKey& key) {
  const MemoryLayoutDesc& layout = dst.layout();
  const std::size_t n = layout.total_bytes();
  switch (s.kind) {
    case Kind::kFp8: {
      std::size_t offset = 0;
      for (std::size_t g = 0; g < layout.num_groups(); ++g) {
        const std::size_t count = layout.group_elements(g);
        std::vector<std::byte> want(layout.group_bytes(g));
        fp8_decode(frame.subspan(offset, count), count, want, layout.dtypes()[g], s.fp8);
        const auto got = dst.group_bytes(g);
        LMCACHE_FUZZ_CHECK(
            std::equal(got.begin(), got.end(), want.begin(), want.end()),
            s.name + ": group " + std::to_string(g) + " differs from the scalar reference decode");
        offset += count;
      }
      break;
    }
    case Kind::kChecksum: {
      LMCACHE_FUZZ_CHECK(same_bytes(dst.bytes(), frame.subspan(kChecksumHeaderBytes, n)),
                         "checksum: the loaded bytes are not the frame's payload");
      MemoryObjPtr again =
          exact_object(n + kChecksumHeaderBytes, byte_layout(n + kChecksumHeaderBytes), {});
      ChecksumSerializer().serialize(dst, *again, key);
      LMCACHE_FUZZ_CHECK(same_bytes(again->bytes(), frame.first(n + kChecksumHeaderBytes)),
                         "checksum: accepted a frame its serializer does not write");
      break;
    }
    case Kind::kAesGcm: {
      auto serializer = std::dynamic_pointer_cast<AesGcmSerializer>(s.pair.serializer);
      LMCACHE_FUZZ_CHECK(serializer != nullptr, s.name + ": not an AesGcmSerializer");
      std::array<std::uint8_t, kAesGcmIvBytes> iv{};
      std::memcpy(iv.data(), frame.data() + 1, iv.size());
      MemoryObjPtr again =
          exact_object(n + kAesGcmOverheadBytes, byte_layout(n + kAesGcmOverheadBytes), {});
      serializer->set_fixed_iv_for_testing(iv);
      serializer->serialize(dst, *again, key);
      serializer->set_fixed_iv_for_testing(std::nullopt);
      LMCACHE_FUZZ_CHECK(same_bytes(again->bytes(), frame.first(n + kAesGcmOverheadBytes)),
                         s.name + ": the plaintext does not encrypt back to the frame");
      break;
    }
    case Kind::kChain:
      break;  // each stage is checked alone above
  }
}

// The source buffer as the input lays it out (mode 1, a narrowed one, is run by the caller).
MemoryObjPtr make_source(std::uint8_t mode, std::uint8_t param, std::span<const std::uint8_t> frame,
                         const MemoryLayoutDesc& dst) {
  const std::size_t n = frame.size();
  switch (mode) {
    case 2: {  // fp8 groups shaped as the destination's, when the frame holds them
      const DType code = (param & 1) != 0 ? DType::kFloat8E5M2 : DType::kFloat8E4M3FN;
      if (dst.total_elements() > n) break;
      std::vector<Shape> shapes;
      for (std::size_t g = 0; g < dst.num_groups(); ++g) {
        shapes.push_back({static_cast<std::int64_t>(dst.group_elements(g))});
      }
      std::vector<DType> dtypes(dst.num_groups(), code);
      return object_of(frame, MemoryLayoutDesc(std::move(shapes), std::move(dtypes)));
    }
    case 3: {  // two uint8 groups
      const std::size_t a = param % (n + 1);
      return object_of(frame, MemoryLayoutDesc({{static_cast<std::int64_t>(a)},
                                                {static_cast<std::int64_t>(n - a)}},
                                               {DType::kUInt8, DType::kUInt8}));
    }
    default:
      break;
  }
  return object_of(frame, byte_layout(n));
}

void fuzz_one(FuzzInput& in) {
  const std::vector<Serde>& all = serdes();
  const Serde& s = all[in.byte() % all.size()];

  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  const std::size_t groups = in.byte() % 4;
  for (std::size_t g = 0; g < groups; ++g) {
    dtypes.push_back(all_dtypes()[in.byte() % all_dtypes().size()]);
    Shape shape(in.byte() % 3);
    for (auto& dim : shape) dim = in.byte() % 17;
    shapes.push_back(std::move(shape));
  }
  const MemoryLayoutDesc layout(std::move(shapes), std::move(dtypes));

  const auto hash = in.bytes(in.byte() % 17);
  static const char* const kSalts[] = {"", "tenant-a", "tenant-b"};
  const ObjectKey key(std::string(hash.begin(), hash.end()), "fuzz", 0, 0, kSalts[in.byte() % 3]);

  const std::uint8_t mode = in.byte() % 4;
  const std::uint8_t param = in.byte();
  const std::span<const std::uint8_t> frame = in.rest();

  MemoryObjPtr src = make_source(mode, param, frame, layout);
  std::size_t used = src->size();  // its layout's bytes: the whole frame but in mode 2
  if (mode == 1) {                 // L2 gave back fewer bytes than the buffer holds
    used -= std::min<std::size_t>(param, used);
    src->set_used_size(used);
  }
  const std::span<const std::uint8_t> seen = frame.first(used);

  MemoryObjPtr dst = exact_object(layout.total_bytes(), layout, kCanary);
  std::string what;
  const Outcome outcome = run(s, *src, *dst, key, &what);
  const std::string said = s.name + " on " + std::to_string(used) + " bytes into " +
                           layout.to_string() + ": " + outcome_name(outcome) + " " + what;

  LMCACHE_FUZZ_CHECK(same_bytes(src->physical_bytes(), frame), said + "; it wrote its source");
  const std::size_t exact = s.pair.exact_size(layout);
  if (used < exact) {
    LMCACHE_FUZZ_CHECK(outcome == Outcome::kInvalidArgument,
                       said + "; the frame is shorter than the " + std::to_string(exact) +
                           " bytes a frame of this layout has");
  }
  if (outcome == Outcome::kInvalidArgument) {
    LMCACHE_FUZZ_CHECK(all_bytes(*dst, kCanary), said + "; it wrote its destination");
  }
  switch (s.kind) {
    case Kind::kFp8: {
      const bool accepts = fp8_accepts(src->layout(), used, layout, s.fp8);
      LMCACHE_FUZZ_CHECK(accepts == (outcome == Outcome::kOk),
                         said + "; fp8's rules say " + (accepts ? "success" : "failure"));
      break;
    }
    case Kind::kChecksum:
    case Kind::kAesGcm:
      if (used >= exact) {
        LMCACHE_FUZZ_CHECK(outcome != Outcome::kInvalidArgument,
                           said + "; a frame of the layout's length is not a short one");
      }
      break;
    case Kind::kChain:
      break;
  }
  if (outcome == Outcome::kOk) check_success(s, seen, *dst, key);
  if (outcome == Outcome::kRuntimeError && s.kind == Kind::kChecksum) {
    // The frame the serializer writes for this payload must not be the one rejected.
    const std::size_t n = layout.total_bytes();
    MemoryObjPtr payload = object_of(seen.subspan(kChecksumHeaderBytes, n), layout);
    MemoryObjPtr valid =
        exact_object(n + kChecksumHeaderBytes, byte_layout(n + kChecksumHeaderBytes), {});
    ChecksumSerializer().serialize(*payload, *valid, key);
    LMCACHE_FUZZ_CHECK(!same_bytes(valid->bytes(), seen.first(n + kChecksumHeaderBytes)),
                       said + "; the frame is valid");
  }
  if (mode == 1) {
    // The narrowed source must read as a buffer of just its logical bytes.
    MemoryObjPtr prefix = object_of(seen, byte_layout(used));
    MemoryObjPtr dst2 = exact_object(layout.total_bytes(), layout, kCanary);
    std::string what2;
    const Outcome outcome2 = run(s, *prefix, *dst2, key, &what2);
    LMCACHE_FUZZ_CHECK(outcome2 == outcome, said + "; its logical prefix alone gives " +
                                                outcome_name(outcome2) + " " + what2);
    if (outcome == Outcome::kOk) {
      LMCACHE_FUZZ_CHECK(std::ranges::equal(dst->physical_bytes(), dst2->physical_bytes()),
                         said + "; its logical prefix alone loads other bytes");
    }
  }
}

}  // namespace
}  // namespace lmcache::fuzz_internal

LMCACHE_FUZZ_TARGET(lmcache::fuzz_internal::fuzz_one)
