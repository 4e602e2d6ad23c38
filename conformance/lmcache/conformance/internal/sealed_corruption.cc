#include "lmcache/conformance/internal/sealed_corruption.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "lmcache/serde/lmcr_record.h"

namespace lmcache::conformance_internal {

namespace {

// Where LMCR v1 keeps its seals (docs/lmcr.md, "Wire layout").
constexpr std::size_t kHeaderCrcAt = 32;
constexpr std::size_t kPayloadCrcAt = 36;

struct Field {
  const char* name;
  std::size_t offset;
  std::size_t width;
};
// Every header field but the magic (a wrong magic is no record: corruption.h's plans cover it)
// and the two CRCs (the seals themselves).
constexpr Field kHeaderFields[] = {{"version", 4, 1},
                                   {"codec", 5, 1},
                                   {"framing", 6, 1},
                                   {"transform", 7, 1},
                                   {"header_size", 8, 4},
                                   {"record_size", 12, 8},
                                   {"uncompressed_size", 20, 8},
                                   {"chunk_count", 28, 4},
                                   {"flags", 40, 4}};
constexpr Field kDescriptorFields[] = {{"offset", 0, 8},
                                       {"compressed size", 8, 4},
                                       {"uncompressed size", 12, 4},
                                       {"CRC-32", 16, 4},
                                       {"flags", 20, 4}};

std::uint64_t read_le(std::span<const std::byte> b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    v |= static_cast<std::uint64_t>(std::to_integer<unsigned>(b[at + i])) << (8 * i);
  }
  return v;
}

std::vector<std::byte> le_bytes(std::uint64_t v, std::size_t width) {
  std::vector<std::byte> out(width);
  for (std::size_t i = 0; i < width; ++i) out[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
  return out;
}

// zlib's CRC-32/IEEE, continued from `crc`, over any length.
std::uint32_t crc32_over(std::uint32_t crc, std::span<const std::byte> b) {
  while (!b.empty()) {
    const std::size_t n = std::min<std::size_t>(b.size(), UINT_MAX);
    crc = static_cast<std::uint32_t>(
        ::crc32(crc, reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(n)));
    b = b.subspan(n);
  }
  return crc;
}

// The header CRC of `header` (header_size bytes), its own field read as zero.
std::uint32_t header_crc(std::span<const std::byte> header) {
  std::uint32_t crc = crc32_over(0, header.first(kHeaderCrcAt));
  const std::byte zeros[4] = {};
  crc = crc32_over(crc, zeros);
  return crc32_over(crc, header.subspan(kHeaderCrcAt + 4));
}

// Values to try in place of `v` in a field of `width` bytes: its neighbours, a 16-byte alignment
// and a descriptor (24 bytes) away, 0, 1, the largest, the top bit alone, and, in a 64-bit
// field, v + 2^32 (what a reader that keeps 32 bits does not see). Each once, v left out.
std::vector<std::uint64_t> candidate_values(std::uint64_t v, std::size_t width) {
  const std::uint64_t mask = width == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
  std::vector<std::uint64_t> c = {v + 1,  v - 1, v + 16, v - 16, v + 24,
                                  v - 24, 0,     1,      mask,   (mask >> 1) + 1};
  if (width == 8) c.push_back(v + (std::uint64_t{1} << 32));
  std::vector<std::uint64_t> out;
  for (std::uint64_t x : c) {
    x &= mask;
    if (x != v && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  return out;
}

// What the plan knows of a record whose header CRC holds.
struct Record {
  std::span<const std::byte> bytes;  // the frame, record_size bytes of it the record
  std::size_t header_size = 0;
  std::uint64_t record_size = 0;
  std::vector<LmcrChunk> chunks;
};

bool parse(std::span<const std::byte> frame, Record& r) {
  if (frame.size() < kLmcrHeaderBytes ||
      std::memcmp(frame.data(), kLmcrMagic.data(), kLmcrMagic.size()) != 0) {
    return false;
  }
  const std::uint64_t hs = read_le(frame, 8, 4);
  const std::uint64_t count = read_le(frame, 28, 4);
  if (count > kLmcrMaxChunks || hs != kLmcrHeaderBytes + kLmcrDescriptorBytes * count ||
      hs > frame.size()) {
    return false;
  }
  const auto header = frame.first(hs);
  if (read_le(header, kHeaderCrcAt, 4) != header_crc(header)) return false;
  r.bytes = frame;
  r.header_size = hs;
  r.record_size = read_le(frame, 12, 8);
  if (r.record_size < hs || r.record_size > frame.size()) return false;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = kLmcrHeaderBytes + kLmcrDescriptorBytes * i;
    LmcrChunk c{read_le(frame, at, 8), static_cast<std::uint32_t>(read_le(frame, at + 8, 4)),
                static_cast<std::uint32_t>(read_le(frame, at + 12, 4)),
                static_cast<std::uint32_t>(read_le(frame, at + 16, 4))};
    if (c.offset < hs || c.offset > r.record_size || c.compressed_size > r.record_size - c.offset) {
      return false;
    }
    r.chunks.push_back(c);
  }
  return true;
}

// A header edit: `field_at` set to `value`, the header CRC recomputed over the record's own
// header_size bytes.
SealedCorruption header_edit(const Record& r, std::size_t field_at, std::size_t width,
                             std::uint64_t value, std::string description) {
  std::vector<std::byte> header(r.bytes.begin(), r.bytes.begin() + r.header_size);
  const std::vector<std::byte> field = le_bytes(value, width);
  std::copy(field.begin(), field.end(), header.begin() + field_at);
  const std::uint32_t crc = header_crc(header);
  return {std::move(description) + ", the header CRC re-sealed",
          {{field_at, field}, {kHeaderCrcAt, le_bytes(crc, 4)}}};
}

// A payload edit: byte `at` (in [header_size, record_size)) set to `value`, the payload CRC and
// then the header CRC recomputed.
SealedCorruption payload_edit(const Record& r, std::size_t at, std::byte value,
                              std::string description) {
  const auto payload = r.bytes.subspan(r.header_size, r.record_size - r.header_size);
  const std::size_t rel = at - r.header_size;
  std::uint32_t crc = crc32_over(0, payload.first(rel));
  crc = crc32_over(crc, std::span<const std::byte>(&value, 1));
  crc = crc32_over(crc, payload.subspan(rel + 1));
  std::vector<std::byte> header(r.bytes.begin(), r.bytes.begin() + r.header_size);
  const std::vector<std::byte> payload_crc = le_bytes(crc, 4);
  std::copy(payload_crc.begin(), payload_crc.end(), header.begin() + kPayloadCrcAt);
  return {std::move(description) + ", the payload and header CRCs re-sealed",
          {{at, {value}},
           {kPayloadCrcAt, payload_crc},
           {kHeaderCrcAt, le_bytes(header_crc(header), 4)}}};
}

std::string bytes_range(std::size_t at, std::size_t width) {
  return "bytes " + std::to_string(at) + ".." + std::to_string(at + width - 1);
}

// The plan's edits, each built only when called: a caller that samples a large record's plan
// copies its header and runs its CRCs for the edits it keeps alone.
using EditMaker = std::function<SealedCorruption()>;

std::vector<EditMaker> lmcr_plan(const Record& r, std::uint64_t seed) {
  std::vector<EditMaker> plan;
  for (const Field& f : kHeaderFields) {
    const std::uint64_t v = read_le(r.bytes, f.offset, f.width);
    for (std::uint64_t x : candidate_values(v, f.width)) {
      plan.push_back([&r, f, v, x] {
        return header_edit(r, f.offset, f.width, x,
                           std::string("header field ") + f.name + " (" +
                               bytes_range(f.offset, f.width) + ") set to " + std::to_string(x) +
                               " from " + std::to_string(v));
      });
    }
  }
  const std::size_t n = r.chunks.size();
  std::vector<std::size_t> which = {0, n / 2, n - 1};
  if (n == 0) which.clear();
  which.erase(std::unique(which.begin(), which.end()), which.end());
  for (std::size_t i : which) {
    const std::size_t base = kLmcrHeaderBytes + kLmcrDescriptorBytes * i;
    for (const Field& f : kDescriptorFields) {
      const std::uint64_t v = read_le(r.bytes, base + f.offset, f.width);
      // A CRC is not a count: one bit of it flipped says all.
      const std::vector<std::uint64_t> values =
          f.offset == 16 ? std::vector<std::uint64_t>{v ^ 1u} : candidate_values(v, f.width);
      for (std::uint64_t x : values) {
        plan.push_back([&r, base, i, f, v, x] {
          return header_edit(r, base + f.offset, f.width, x,
                             "chunk " + std::to_string(i) + "'s descriptor " + f.name + " (" +
                                 bytes_range(base + f.offset, f.width) + ") set to " +
                                 std::to_string(x) + " from " + std::to_string(v));
        });
      }
    }
  }
  // Streams: a bit flipped at the start, a seeded middle and the end of the first and last
  // chunks (in a gzip member's header a flip may land on a byte zlib ignores: the verdict is the
  // reference's to give).
  std::vector<std::size_t> streams;
  if (n > 0) streams.push_back(0);
  if (n > 1) streams.push_back(n - 1);
  std::uint64_t x = seed;
  for (std::size_t i : streams) {
    const LmcrChunk& c = r.chunks[i];
    if (c.compressed_size == 0) continue;
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t positions[] = {0, (x >> 33) % c.compressed_size, c.compressed_size - 1u};
    for (std::size_t pos : positions) {
      const std::size_t at = static_cast<std::size_t>(c.offset) + pos;
      const unsigned bit = static_cast<unsigned>((x >> 20) % 8);
      plan.push_back([&r, at, bit, pos, i] {
        return payload_edit(r, at, r.bytes[at] ^ static_cast<std::byte>(1u << bit),
                            "bit " + std::to_string(bit) + " of byte " + std::to_string(pos) +
                                " of chunk " + std::to_string(i) + "'s stream (record byte " +
                                std::to_string(at) + ") flipped");
      });
    }
  }
  // An alignment gap (after the descriptors or after a chunk) given a non-zero byte.
  std::size_t end = r.header_size;
  for (std::size_t i = 0; i < n; ++i) {
    if (r.chunks[i].offset > end) {
      plan.push_back([&r, end, i] {
        return payload_edit(r, end, std::byte{0x5a},
                            "the gap byte at " + std::to_string(end) + " before chunk " +
                                std::to_string(i) + " set to 0x5a");
      });
      break;
    }
    end = static_cast<std::size_t>(r.chunks[i].offset) + r.chunks[i].compressed_size;
  }
  return plan;
}

}  // namespace

std::vector<SealedCorruption> sealed_corruption_plan(std::string_view type,
                                                     std::span<const std::byte> frame,
                                                     std::uint64_t seed, std::size_t most) {
  Record r;
  if (type != "lmcr" || !parse(frame, r) || most == 0) return {};
  const std::vector<EditMaker> makers = lmcr_plan(r, seed);
  // Every step-th edit from a seeded start: the sample spans every kind of edit.
  const std::size_t step = makers.size() <= most ? 1 : (makers.size() + most - 1) / most;
  std::vector<SealedCorruption> plan;
  for (std::size_t i = seed % step; i < makers.size(); i += step) plan.push_back(makers[i]());
  return plan;
}

void reseal_lmcr_header(std::span<std::byte> record) {
  if (record.size() < kLmcrHeaderBytes) {
    throw std::invalid_argument("reseal_lmcr_header: " + std::to_string(record.size()) +
                                " bytes hold no LMCR header (44)");
  }
  const std::uint64_t hs = read_le(record, 8, 4);
  if (hs < kLmcrHeaderBytes || hs > record.size()) {
    throw std::invalid_argument("reseal_lmcr_header: header_size " + std::to_string(hs) +
                                " outside the record's 44.." + std::to_string(record.size()));
  }
  const std::vector<std::byte> crc = le_bytes(header_crc(record.first(hs)), 4);
  std::copy(crc.begin(), crc.end(), record.begin() + kHeaderCrcAt);
}

ScopedPatches::ScopedPatches(MemoryObj& obj, const std::vector<BytePatch>& patches) : obj_(obj) {
  for (const BytePatch& p : patches) {
    if (p.offset > obj.size() || p.bytes.size() > obj.size() - p.offset) {
      throw std::invalid_argument("ScopedPatches: a patch of " + std::to_string(p.bytes.size()) +
                                  " bytes at " + std::to_string(p.offset) + " reaches past the " +
                                  std::to_string(obj.size()) + "-byte object");
    }
  }
  for (const BytePatch& p : patches) {
    std::byte* at = obj.data() + p.offset;
    saved_.push_back({p.offset, std::vector<std::byte>(at, at + p.bytes.size())});
    std::memcpy(at, p.bytes.data(), p.bytes.size());
  }
}

ScopedPatches::~ScopedPatches() {
  // In reverse, so that patches that overlap come back to the original bytes.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    std::memcpy(obj_.data() + it->offset, it->bytes.data(), it->bytes.size());
  }
}

}  // namespace lmcache::conformance_internal
