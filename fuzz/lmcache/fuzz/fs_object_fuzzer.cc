// fs_object_fuzzer: the fs adapter's object files, as a load reads them.
//
// What is at an object's path may be damaged, cut short, another key's, of the older format, or
// not a file at all (storage/lmcache/fs/fs_connector.h). Each input puts one thing at the path of
// a key and loads it through an FsConnector, one batch get as the bridge submits it. Beyond ASan
// and UBSan, it checks the header's promises against the format computed here, with zlib:
//   - a hit exactly for a regular file of the asked length (plus, with crc32, the trailer: crc32
//     of the key string then of the payload, little-endian, then "LMC2" that matches), and the
//     loaded bytes are the file's payload: damage is never loaded, a valid object never missed;
//   - a miss for anything but a regular file, or for a file of another length, leaves the
//     destination untouched;
//   - a get batch completes ok with one flag per key (misses are per key, never a failed batch).
//
// Input (fuzz/tools/make_seeds.py writes it): flags (bit 0 crc32, bit 1 O_DIRECT, bit 2 the long
// key that is split into directories, bit 3 a page-aligned destination), what is at the path
// (a regular file, a directory, a symbolic link to the bytes, a FIFO, nothing), the length
// mode and a u16 length, then the file's bytes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "lmcache/fs/fs_connector.h"
#include "lmcache/fuzz/fuzz_support.h"

namespace lmcache::fuzz_internal {
namespace {

namespace stdfs = std::filesystem;
using fs::FsChecksum;
using fs::FsConnector;

// The keys the seeds are written for (make_seeds.py FS_KEYS): a short one and one longer than
// FsConnector::kMaxNameBytes.
const std::string kShortKey = "fuzz-object";
const std::string kLongKey = "fuzz-" + std::string(295, 'x');

// A private directory with one connector per (checksum, O_DIRECT) choice; removed at exit.
struct State {
  stdfs::path dir;
  std::unique_ptr<FsConnector> connectors[4];

  State() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/lmcache-fs-fuzz-XXXXXX";
    LMCACHE_FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr,
                       "mkdtemp " + pattern + ": " + std::strerror(errno));
    dir = pattern;
  }
  ~State() {
    for (auto& c : connectors) c.reset();
    std::error_code ec;
    stdfs::remove_all(dir, ec);
  }

  FsConnector& connector(bool crc, bool direct) {
    auto& c = connectors[(crc ? 1 : 0) + (direct ? 2 : 0)];
    if (!c) {
      fs::FsConnectorOptions o;
      o.base_path = dir / ("c" + std::to_string(crc) + std::to_string(direct));
      o.checksum = crc ? FsChecksum::kCrc32 : FsChecksum::kNone;
      o.use_odirect = direct;
      o.num_workers = 1;
      c = std::make_unique<FsConnector>(o);
    }
    return *c;
  }
};

State& state() {
  static State s;
  return s;
}

void write_file(const stdfs::path& path, std::span<const std::uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  LMCACHE_FUZZ_CHECK(fd >= 0, "create " + path.string() + ": " + std::strerror(errno));
  LMCACHE_FUZZ_CHECK(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()),
                     "write " + path.string());
  ::close(fd);
}

// The format's check, as fs_connector.h states it.
bool valid_trailer(const std::string& key, std::span<const std::uint8_t> file, std::size_t len) {
  const std::uint8_t* t = file.data() + len;
  if (std::memcmp(t + 4, "LMC2", 4) != 0) return false;
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  crc = ::crc32_z(crc, reinterpret_cast<const Bytef*>(key.data()), key.size());
  crc = ::crc32_z(crc, file.data(), len);
  const std::uint32_t stored = t[0] | (t[1] << 8) | (t[2] << 16) | (std::uint32_t{t[3]} << 24);
  return stored == static_cast<std::uint32_t>(crc);
}

bridge::Completion load(FsConnector& c, const std::string& key, void* buf, std::size_t len) {
  const std::uint64_t id = c.submit_batch_get({key}, {buf}, {len}, len);
  for (;;) {
    pollfd p{c.event_fd(), POLLIN, 0};
    LMCACHE_FUZZ_CHECK(poll_for(p, std::chrono::seconds(10)) == 1, "no completion within 10 s");
    for (bridge::Completion& done : c.drain_completions()) {
      LMCACHE_FUZZ_CHECK(done.future_id == id, "a completion of another batch");
      return std::move(done);
    }
  }
}

void fuzz_one(FuzzInput& in) {
  const std::uint8_t flags = in.byte();
  const bool crc = (flags & 1) != 0;
  const bool direct = (flags & 2) != 0;
  const std::string& key = (flags & 4) != 0 ? kLongKey : kShortKey;
  const bool aligned = (flags & 8) != 0;
  const std::uint8_t kind = in.byte() % 5;
  const bool natural_length = in.byte() % 2 == 0;
  const std::uint16_t asked = in.u16();
  const std::span<const std::uint8_t> file = in.rest();

  FsConnector& c = state().connector(crc, direct);
  const stdfs::path path = c.path_for(key);
  const stdfs::path target = path.string() + ".target";
  std::error_code ec;
  stdfs::remove_all(path, ec);
  stdfs::remove(target, ec);
  stdfs::create_directories(path.parent_path(), ec);
  switch (kind) {
    case 0:
      write_file(path, file);
      break;
    case 1:
      stdfs::create_directory(path, ec);
      break;
    case 2:  // a symbolic link is never followed, even to a valid object
      write_file(target, file);
      stdfs::create_symlink(target, path, ec);
      break;
    case 3:  // a FIFO must not block the load
      LMCACHE_FUZZ_CHECK(::mkfifo(path.c_str(), 0644) == 0, "mkfifo: " + path.string());
      break;
    default:  // nothing there
      break;
  }

  const std::size_t trailer = crc ? FsConnector::kTrailerBytes : 0;
  const std::size_t len =
      natural_length ? (file.size() >= trailer ? file.size() - trailer : 0) : asked;
  constexpr std::byte kCanary{0x5A};
  std::byte* buf = nullptr;
  if (aligned) {
    void* p = nullptr;
    LMCACHE_FUZZ_CHECK(::posix_memalign(&p, FsConnector::kDirectAlignment, len + 1) == 0,
                       "posix_memalign");
    buf = static_cast<std::byte*>(p);
  } else {
    buf = static_cast<std::byte*>(std::malloc(len + 1));
  }
  std::unique_ptr<std::byte, decltype(&std::free)> owner(buf, &std::free);
  std::memset(buf, static_cast<int>(kCanary), len + 1);

  const bridge::Completion done = load(c, key, buf, len);
  const std::string said = std::string("kind ") + std::to_string(kind) + ", " +
                           std::to_string(file.size()) + " bytes, asked " + std::to_string(len) +
                           (crc ? ", crc32" : "") + (direct ? ", O_DIRECT" : "") + ": " +
                           (done.error.empty() ? "no error" : done.error);
  LMCACHE_FUZZ_CHECK(done.ok && done.result_bytes.size() == 1, said + "; the batch failed");
  const bool hit = done.result_bytes[0] == 1;
  const bool right_length = kind == 0 && file.size() == len + trailer;
  const bool valid = right_length && (!crc || valid_trailer(key, file, len));
  LMCACHE_FUZZ_CHECK(hit == valid, said + (hit ? "; a hit" : "; a miss") + " for " +
                                       (valid ? "a valid object" : "bytes that are not one"));
  if (hit) {
    LMCACHE_FUZZ_CHECK(len == 0 || std::memcmp(buf, file.data(), len) == 0,
                       said + "; the loaded bytes are not the file's");
  } else if (!right_length) {
    for (std::size_t i = 0; i < len; ++i) {
      LMCACHE_FUZZ_CHECK(buf[i] == kCanary, said + "; a refused object wrote the destination");
    }
  }
  LMCACHE_FUZZ_CHECK(buf[len] == kCanary, said + "; it wrote past the asked length");
}

}  // namespace
}  // namespace lmcache::fuzz_internal

LMCACHE_FUZZ_TARGET(lmcache::fuzz_internal::fuzz_one)
