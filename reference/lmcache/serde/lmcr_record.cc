#include "lmcache/serde/lmcr_record.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace lmcache {

namespace {

// Header field offsets (docs/lmcr.md).
constexpr std::size_t kOffVersion = 4;
constexpr std::size_t kOffCodec = 5;
constexpr std::size_t kOffFraming = 6;
constexpr std::size_t kOffTransform = 7;
constexpr std::size_t kOffHeaderSize = 8;
constexpr std::size_t kOffRecordSize = 12;
constexpr std::size_t kOffUncompressedSize = 20;
constexpr std::size_t kOffChunkCount = 28;
constexpr std::size_t kOffHeaderCrc = 32;
constexpr std::size_t kOffPayloadCrc = 36;
constexpr std::size_t kOffFlags = 40;
constexpr std::size_t kMaxChunkSize = std::size_t{1} << 30;
// zlib's gzip wrapper: a 10-byte header and an 8-byte trailer.
constexpr std::size_t kGzipWrapperBytes = 18;

std::uint64_t get_le(const std::byte* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

void put_le(std::byte* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    p[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}

std::size_t align_up(std::size_t n) {
  return (n + kLmcrAlignment - 1) / kLmcrAlignment * kLmcrAlignment;
}

// CRC-32/IEEE (zlib's crc32) of `bytes`, fed in pieces zlib's uInt length can take.
std::uint32_t crc_of(std::span<const std::byte> bytes, std::uint32_t crc = 0) {
  uLong c = crc;
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(bytes.size(), 1u << 30);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes = bytes.subspan(n);
  }
  return static_cast<std::uint32_t>(c);
}

[[noreturn]] void fail(const std::string& what) { throw LmcrError("LMCR record: " + what); }

std::string num(std::uint64_t v) { return std::to_string(v); }

// The header's CRC: the header and descriptor table with the CRC field read as zero.
std::uint32_t header_crc(std::span<const std::byte> header) {
  static constexpr std::byte kZero[4] = {};
  std::uint32_t c = crc_of(header.first(kOffHeaderCrc));
  c = crc_of(kZero, c);
  return crc_of(header.subspan(kOffHeaderCrc + 4), c);
}

int window_bits(LmcrFraming framing) { return framing == LmcrFraming::kGzip ? 15 + 16 : -15; }

const char* framing_name(LmcrFraming framing) {
  return framing == LmcrFraming::kGzip ? "gzip" : "raw Deflate";
}

// Inflates one chunk's stream into exactly `out`; refuses a stream that ends early, writes more,
// or is followed by other bytes.
void inflate_chunk(std::span<const std::byte> stream, std::span<std::byte> out, LmcrFraming framing,
                   std::size_t index) {
  z_stream z{};
  if (inflateInit2(&z, window_bits(framing)) != Z_OK) {
    throw std::runtime_error("LMCR record: zlib inflateInit2 failed");
  }
  z.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(stream.data()));
  z.avail_in = static_cast<uInt>(stream.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  // The output is exactly the declared size: a stream that still has output when it is full
  // inflates past it. One byte of scratch tells that apart from a stream ending right there.
  std::byte extra[1];
  if (rc != Z_STREAM_END && z.avail_out == 0 && rc != Z_DATA_ERROR) {
    z.next_out = reinterpret_cast<Bytef*>(extra);
    z.avail_out = 1;
    rc = inflate(&z, Z_FINISH);
    if (z.avail_out == 0) {
      inflateEnd(&z);
      fail("chunk " + num(index) + " inflates past its declared " + num(out.size()) + " bytes");
    }
  }
  const std::size_t produced = z.total_out;
  const std::size_t left_in = z.avail_in;
  const std::string zmsg = z.msg != nullptr ? z.msg : "";
  inflateEnd(&z);
  if (rc == Z_DATA_ERROR) {
    fail("chunk " + num(index) + " is no valid " + framing_name(framing) + " stream (" + zmsg +
         ")");
  }
  if (rc != Z_STREAM_END) {
    fail("chunk " + num(index) + "'s " + framing_name(framing) + " stream is truncated (" +
         num(produced) + " of " + num(out.size()) + " bytes inflated)");
  }
  if (left_in != 0) {
    fail("chunk " + num(index) + " has " + num(left_in) +
         " bytes after its stream's end (trailing data or a second stream)");
  }
  if (produced != out.size()) {
    fail("chunk " + num(index) + " inflates to " + num(produced) + " bytes, its descriptor says " +
         num(out.size()));
  }
}

}  // namespace

std::size_t lmcr_header_size(std::span<const std::byte> bytes) {
  if (bytes.size() < kOffHeaderSize + 4) {
    fail("truncated: " + num(bytes.size()) + " bytes, the header size is at bytes 8..11");
  }
  if (std::memcmp(bytes.data(), kLmcrMagic.data(), kLmcrMagic.size()) != 0) {
    fail("bad magic (not \"LMCR\")");
  }
  const std::uint64_t header_size = get_le(bytes.data() + kOffHeaderSize, 4);
  if (header_size < kLmcrHeaderBytes || header_size > kLmcrMaxHeaderBytes) {
    fail("header size " + num(header_size) + " outside [44, 1048576]");
  }
  return static_cast<std::size_t>(header_size);
}

LmcrRecordInfo lmcr_parse_header(std::span<const std::byte> bytes) {
  const std::size_t header_size = lmcr_header_size(bytes);
  if (bytes.size() < header_size) {
    fail("truncated: " + num(bytes.size()) + " bytes, the header and descriptors take " +
         num(header_size));
  }
  const std::byte* h = bytes.data();
  const auto version = std::to_integer<unsigned>(h[kOffVersion]);
  if (version != kLmcrVersion) fail("unknown version " + num(version));
  const auto codec = std::to_integer<unsigned>(h[kOffCodec]);
  if (codec != kLmcrCodecDeflate) fail("unknown codec " + num(codec) + " (1: Deflate)");
  const auto framing = std::to_integer<unsigned>(h[kOffFraming]);
  if (framing != 1 && framing != 2) fail("unknown framing " + num(framing) + " (1 raw, 2 gzip)");
  const auto transform = std::to_integer<unsigned>(h[kOffTransform]);
  if (transform != 0) fail("unknown post-decompression transform " + num(transform) + " (0)");
  const std::uint64_t chunk_count = get_le(h + kOffChunkCount, 4);
  if (chunk_count > kLmcrMaxChunks ||
      header_size != kLmcrHeaderBytes + kLmcrDescriptorBytes * chunk_count) {
    fail("header size " + num(header_size) + " does not match " + num(chunk_count) +
         " chunks (44 + 24 each)");
  }
  if (get_le(h + kOffFlags, 4) != 0) fail("reserved header flags are not zero");
  const auto stored_crc = static_cast<std::uint32_t>(get_le(h + kOffHeaderCrc, 4));
  if (stored_crc != header_crc(bytes.first(header_size))) fail("header CRC mismatch");

  LmcrRecordInfo info;
  info.framing = static_cast<LmcrFraming>(framing);
  info.header_size = static_cast<std::uint32_t>(header_size);
  info.record_size = get_le(h + kOffRecordSize, 8);
  info.uncompressed_size = get_le(h + kOffUncompressedSize, 8);
  if (chunk_count == 0) {
    if (info.record_size != kLmcrHeaderBytes || info.uncompressed_size != 0) {
      fail("a record with no chunk must be 44 bytes and hold 0 bytes; it says " +
           num(info.record_size) + " and " + num(info.uncompressed_size));
    }
    return info;
  }
  info.chunks.reserve(static_cast<std::size_t>(chunk_count));
  std::uint64_t expected_offset = align_up(header_size);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < chunk_count; ++i) {
    const std::byte* d = h + kLmcrHeaderBytes + kLmcrDescriptorBytes * i;
    LmcrChunk c;
    c.offset = get_le(d, 8);
    c.compressed_size = static_cast<std::uint32_t>(get_le(d + 8, 4));
    c.uncompressed_size = static_cast<std::uint32_t>(get_le(d + 12, 4));
    c.crc32 = static_cast<std::uint32_t>(get_le(d + 16, 4));
    const std::string which = "chunk " + num(i) + ": ";
    if (get_le(d + 20, 4) != 0) fail(which + "reserved descriptor flags are not zero");
    if (c.offset != expected_offset) {
      fail(which + "payload at offset " + num(c.offset) + ", expected " + num(expected_offset) +
           " (the next 16-byte boundary)");
    }
    if (c.compressed_size == 0 || c.uncompressed_size == 0) {
      fail(which + "empty (compressed " + num(c.compressed_size) + ", uncompressed " +
           num(c.uncompressed_size) + " bytes)");
    }
    if (i + 1 < chunk_count && c.uncompressed_size % kLmcrAlignment != 0) {
      fail(which + "uncompressed size " + num(c.uncompressed_size) +
           " is not a multiple of 16 (only the last chunk's may be)");
    }
    total += c.uncompressed_size;
    expected_offset = c.offset + c.compressed_size;
    if (i + 1 < chunk_count) expected_offset = align_up(expected_offset);
    info.chunks.push_back(c);
  }
  if (total != info.uncompressed_size) {
    fail("uncompressed size " + num(info.uncompressed_size) + " is not the chunks' sum " +
         num(total));
  }
  if (info.record_size != expected_offset) {
    fail("record size " + num(info.record_size) + " is not where the last chunk ends (" +
         num(expected_offset) + ")");
  }
  return info;
}

LmcrRecordInfo lmcr_validate_record(std::span<const std::byte> record) {
  LmcrRecordInfo info = lmcr_parse_header(record);
  if (record.size() != info.record_size) {
    fail(std::string(record.size() < info.record_size ? "truncated" : "too long") + ": " +
         num(record.size()) + " bytes, the header says " + num(info.record_size));
  }
  const auto stored = static_cast<std::uint32_t>(get_le(record.data() + kOffPayloadCrc, 4));
  if (stored != crc_of(record.subspan(info.header_size))) fail("payload CRC mismatch");
  std::uint64_t gap_start = info.header_size;
  for (std::size_t i = 0; i < info.chunks.size(); ++i) {
    const LmcrChunk& c = info.chunks[i];
    for (std::uint64_t b = gap_start; b < c.offset; ++b) {
      if (record[b] != std::byte{0}) fail("alignment gap before chunk " + num(i) + " is not zero");
    }
    gap_start = c.offset + c.compressed_size;
  }
  return info;
}

void lmcr_decode(std::span<const std::byte> bytes, std::span<std::byte> out) {
  const LmcrRecordInfo header = lmcr_parse_header(bytes);
  if (bytes.size() < header.record_size) {
    fail("truncated: " + num(bytes.size()) + " bytes, the header says " + num(header.record_size));
  }
  const std::span<const std::byte> record =
      bytes.first(static_cast<std::size_t>(header.record_size));
  const LmcrRecordInfo info = lmcr_validate_record(record);
  if (info.uncompressed_size != out.size()) {
    fail("holds " + num(info.uncompressed_size) + " bytes uncompressed, the destination " +
         num(out.size()));
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < info.chunks.size(); ++i) {
    const LmcrChunk& c = info.chunks[i];
    const std::span<std::byte> dst = out.subspan(at, c.uncompressed_size);
    inflate_chunk(record.subspan(static_cast<std::size_t>(c.offset), c.compressed_size), dst,
                  info.framing, i);
    if (crc_of(dst) != c.crc32) fail("chunk " + num(i) + "'s CRC mismatch after inflating");
    at += c.uncompressed_size;
  }
}

void lmcr_validate_options(const LmcrEncodeOptions& options) {
  if (options.framing != LmcrFraming::kRaw && options.framing != LmcrFraming::kGzip) {
    throw std::invalid_argument("LMCR: framing must be raw (1) or gzip (2)");
  }
  if (options.chunk_size == 0 || options.chunk_size % kLmcrAlignment != 0 ||
      options.chunk_size > kMaxChunkSize) {
    throw std::invalid_argument(
        "LMCR: chunk_size must be a positive multiple of 16 up to 1 GiB, got " +
        num(options.chunk_size));
  }
  if (options.level < 0 || options.level > 9) {
    throw std::invalid_argument("LMCR: level must be 0..9, got " + std::to_string(options.level));
  }
}

std::size_t lmcr_max_record_size(std::size_t input_bytes, const LmcrEncodeOptions& options) {
  lmcr_validate_options(options);
  const std::size_t chunks = (input_bytes + options.chunk_size - 1) / options.chunk_size;
  if (chunks > kLmcrMaxChunks) {
    throw std::invalid_argument("LMCR: " + num(input_bytes) + " bytes at chunk_size " +
                                num(options.chunk_size) + " need " + num(chunks) +
                                " chunks, more than the format's 43688");
  }
  std::size_t bound = align_up(kLmcrHeaderBytes + kLmcrDescriptorBytes * chunks);
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t n = std::min(options.chunk_size, input_bytes - i * options.chunk_size);
    bound += align_up(compressBound(static_cast<uLong>(n)) + kGzipWrapperBytes);
  }
  return bound;
}

std::size_t lmcr_encode(std::span<const std::byte> input, std::span<std::byte> out,
                        const LmcrEncodeOptions& options) {
  lmcr_validate_options(options);
  const std::size_t chunks = (input.size() + options.chunk_size - 1) / options.chunk_size;
  if (chunks > kLmcrMaxChunks) (void)lmcr_max_record_size(input.size(), options);  // throws why
  const std::size_t header_size = kLmcrHeaderBytes + kLmcrDescriptorBytes * chunks;
  if (out.size() < header_size) {
    throw std::invalid_argument("LMCR: output of " + num(out.size()) +
                                " bytes cannot hold the header (" + num(header_size) + ")");
  }
  std::memset(out.data(), 0, header_size);
  std::size_t end = header_size;  // where the record ends so far
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::size_t begin = i * options.chunk_size;
    const std::span<const std::byte> piece =
        input.subspan(begin, std::min(options.chunk_size, input.size() - begin));
    const std::size_t offset = align_up(end);
    if (offset > out.size()) {
      throw std::invalid_argument("LMCR: output of " + num(out.size()) +
                                  " bytes too small for chunk " + num(i));
    }
    std::memset(out.data() + end, 0, offset - end);  // alignment gap
    z_stream z{};
    if (deflateInit2(&z, options.level, Z_DEFLATED, window_bits(options.framing), 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("LMCR: zlib deflateInit2 failed");
    }
    gz_header gz{};
    gz.os = 255;  // unknown, as Python's gzip module writes it; mtime 0, no name
    if (options.framing == LmcrFraming::kGzip && deflateSetHeader(&z, &gz) != Z_OK) {
      deflateEnd(&z);
      throw std::runtime_error("LMCR: zlib deflateSetHeader failed");
    }
    z.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(piece.data()));
    z.avail_in = static_cast<uInt>(piece.size());
    const std::size_t room = std::min<std::size_t>(out.size() - offset, 0xffffffffu);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + offset);
    z.avail_out = static_cast<uInt>(room);
    const int rc = deflate(&z, Z_FINISH);
    const std::size_t written = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
      throw std::invalid_argument("LMCR: output of " + num(out.size()) +
                                  " bytes too small for chunk " + num(i));
    }
    std::byte* d = out.data() + kLmcrHeaderBytes + kLmcrDescriptorBytes * i;
    put_le(d, offset, 8);
    put_le(d + 8, written, 4);
    put_le(d + 12, piece.size(), 4);
    put_le(d + 16, crc_of(piece), 4);
    end = offset + written;
  }
  std::byte* h = out.data();
  std::memcpy(h, kLmcrMagic.data(), kLmcrMagic.size());
  h[kOffVersion] = std::byte{kLmcrVersion};
  h[kOffCodec] = std::byte{kLmcrCodecDeflate};
  h[kOffFraming] = static_cast<std::byte>(options.framing);
  put_le(h + kOffHeaderSize, header_size, 4);
  put_le(h + kOffRecordSize, end, 8);
  put_le(h + kOffUncompressedSize, input.size(), 8);
  put_le(h + kOffChunkCount, chunks, 4);
  put_le(h + kOffPayloadCrc, crc_of(out.subspan(header_size, end - header_size)), 4);
  put_le(h + kOffHeaderCrc, header_crc(out.first(header_size)), 4);
  return end;
}

}  // namespace lmcache
