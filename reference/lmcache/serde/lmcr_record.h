// File: lmcache/serde/lmcr_record.h
//
// LMCache's portable compressed record, version 1 ("LMCR v1", docs/lmcr.md): opaque bytes cut
// into chunks, each one complete Deflate stream (raw or gzip framing), behind a self-describing
// header. All integers are little-endian:
//   [44-byte header][24-byte descriptor per chunk][zero pad to 16][chunk 0][zero pad to 16]...
// header: "LMCR", version 1, codec 1 (Deflate), framing 1 raw / 2 gzip, transform 0,
//   header_size u32 (= 44 + 24 n), record_size u64, uncompressed_size u64, chunk_count u32,
//   header CRC-32 (header and descriptors, this field zeroed), payload CRC-32 (bytes
//   header_size..record_size, gaps included), flags u32 (0).
// descriptor: offset u64 (from the record's start), compressed size u32, uncompressed size u32,
//   CRC-32 of the uncompressed chunk, flags u32 (0).
// The header is at most 1 MiB (43,688 chunks); every chunk but the last inflates to a multiple of
// 16 bytes; an empty input is a 44-byte record with no chunk and a zero payload CRC.
//
// Every check that fails throws LmcrError naming the check and the values found; nothing here
// allocates more than a caller's buffers and one zlib stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace lmcache {

inline constexpr std::string_view kLmcrMagic = "LMCR";
inline constexpr std::uint8_t kLmcrVersion = 1;
inline constexpr std::uint8_t kLmcrCodecDeflate = 1;
inline constexpr std::size_t kLmcrHeaderBytes = 44;
inline constexpr std::size_t kLmcrDescriptorBytes = 24;
inline constexpr std::size_t kLmcrAlignment = 16;
inline constexpr std::size_t kLmcrMaxHeaderBytes = std::size_t{1} << 20;
inline constexpr std::size_t kLmcrMaxChunks =
    (kLmcrMaxHeaderBytes - kLmcrHeaderBytes) / kLmcrDescriptorBytes;  // 43,688

enum class LmcrFraming : std::uint8_t { kRaw = 1, kGzip = 2 };

// LmcrError: a record that fails one of the format's checks.
class LmcrError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LmcrChunk {
  std::uint64_t offset = 0;
  std::uint32_t compressed_size = 0;
  std::uint32_t uncompressed_size = 0;
  std::uint32_t crc32 = 0;
};

// What a header says, once every check passed.
struct LmcrRecordInfo {
  LmcrFraming framing = LmcrFraming::kRaw;
  std::uint32_t header_size = 0;
  std::uint64_t record_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::vector<LmcrChunk> chunks;
};

// lmcr_header_size()
//
// How many bytes the header of the record at `bytes` takes (its header_size field), from its
// first 12 bytes; throws LmcrError when fewer are given, the magic is wrong or the size is
// outside [44, 1 MiB]. For size discovery before lmcr_parse_header().
std::size_t lmcr_header_size(std::span<const std::byte> bytes);

// lmcr_parse_header()
//
// Parses and checks the header and descriptor table at the start of `bytes` (which must hold at
// least header_size bytes; more are ignored): magic, version, codec, framing, transform, header
// size (= 44 + 24 n, n <= 43,688), flags, header CRC, and the descriptors' layout (each payload at
// the 16-byte boundary after the previous one, positive sizes, every non-final chunk a multiple of
// 16 bytes uncompressed, the sizes summing to uncompressed_size, the last chunk ending exactly at
// record_size). Payload bytes are not read. Throws LmcrError naming the first failed check.
LmcrRecordInfo lmcr_parse_header(std::span<const std::byte> bytes);

// lmcr_validate_record()
//
// lmcr_parse_header() plus what needs the whole record: `record` holds exactly record_size bytes,
// the payload CRC matches and every alignment gap is zero. Streams are not inflated.
LmcrRecordInfo lmcr_validate_record(std::span<const std::byte> record);

// lmcr_decode()
//
// Validates the record at the start of `bytes` (its record_size bytes; what follows is ignored)
// and inflates it into `out`, whose size must equal uncompressed_size. Each chunk must be exactly
// one complete stream of its framing, inflate to exactly its declared size (output is bounded by
// it: a stream that would write more is refused before it does) and match its CRC. Throws
// LmcrError; `out` is then partly written and must not be used.
void lmcr_decode(std::span<const std::byte> bytes, std::span<std::byte> out);

struct LmcrEncodeOptions {
  LmcrFraming framing = LmcrFraming::kRaw;
  // Uncompressed bytes per chunk: positive, a multiple of 16, at most 1 GiB.
  std::size_t chunk_size = std::size_t{1} << 20;
  int level = 6;  // zlib's compression level, 0..9
};

// lmcr_validate_options()
//
// Throws std::invalid_argument naming the bad field (chunk_size, level, framing).
void lmcr_validate_options(const LmcrEncodeOptions& options);

// lmcr_max_record_size()
//
// An upper bound on the record of `input_bytes` bytes under `options` (zlib's compressBound per
// chunk plus the gzip wrapper and alignment). Throws std::invalid_argument when the input would
// need more than 43,688 chunks at options.chunk_size.
std::size_t lmcr_max_record_size(std::size_t input_bytes, const LmcrEncodeOptions& options);

// lmcr_encode()
//
// Writes the record of `input` into `out` and returns its size. Gzip members carry mtime 0 and
// OS 255 (unknown), as Python's gzip module writes them, so that a record is one byte string for a
// given zlib. Throws std::invalid_argument (nothing usable written) when the options are bad or
// `out` is smaller than the record; std::runtime_error when zlib fails.
std::size_t lmcr_encode(std::span<const std::byte> input, std::span<std::byte> out,
                        const LmcrEncodeOptions& options);

}  // namespace lmcache
