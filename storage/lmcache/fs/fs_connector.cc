#include "lmcache/fs/fs_connector.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "lmcache/bridge/key_codec.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/fs/lmcache_file_names.h"

namespace lmcache::fs {

namespace {

constexpr char kTrailerMagic[4] = {'L', 'M', 'C', '2'};
constexpr std::string_view kTempInfix = ".tmp.";

std::string errno_text(int err) { return std::strerror(err); }

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// The trailer's crc: zlib's crc32 of the key string, then of the payload, so that bytes are
// tied to their key (another key's file of the same length is a mismatch, not a hit).
std::uint32_t crc32_of(const std::string& key, const void* data, std::size_t len) {
  uLong crc = ::crc32_z(0L, Z_NULL, 0);
  crc =
      ::crc32_z(crc, reinterpret_cast<const Bytef*>(key.data()), static_cast<z_size_t>(key.size()));
  crc = ::crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(len));
  return static_cast<std::uint32_t>(crc);
}

// What a file of mode `mode` is, for a load that cannot use it ("is a FIFO").
std::string what_is(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO";
  if (S_ISLNK(mode)) return "is a symbolic link";
  if (S_ISSOCK(mode)) return "is a socket";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  return "is not a regular file";
}

void make_trailer(std::uint32_t crc, unsigned char out[8]) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(crc >> (8 * i));
  std::memcpy(out + 4, kTrailerMagic, 4);
}

// The crc in the trailer, or nullopt when the magic is wrong.
std::optional<std::uint32_t> parse_trailer(const unsigned char in[8]) {
  if (std::memcmp(in + 4, kTrailerMagic, 4) != 0) return std::nullopt;
  std::uint32_t crc = 0;
  for (int i = 0; i < 4; ++i) crc |= static_cast<std::uint32_t>(in[i]) << (8 * i);
  return crc;
}

// Full pread/pwrite: 0 on success, else errno (EIO for a short read at end of file).
int pwrite_all(int fd, const void* buf, std::size_t len, off_t offset) {
  const auto* p = static_cast<const char*>(buf);
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, p, len, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    len -= static_cast<std::size_t>(n);
    offset += n;
  }
  return 0;
}

// Reads up to `len` bytes; the count read in *got (short only at end of file).
int pread_some(int fd, void* buf, std::size_t len, off_t offset, std::size_t* got) {
  auto* p = static_cast<char*>(buf);
  *got = 0;
  while (*got < len) {
    const ssize_t n = ::pread(fd, p + *got, len - *got, offset + static_cast<off_t>(*got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return 0;
    *got += static_cast<std::size_t>(n);
  }
  return 0;
}

bool is_aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % FsConnector::kDirectAlignment == 0;
}

// "<name>.tmp.<pid>-<n>": the pid, or 0 when `name` is not one of our temporary files.
pid_t temp_owner(const std::string& name) {
  const std::size_t at = name.rfind(kTempInfix);
  if (at == std::string::npos) return 0;
  std::string_view rest = std::string_view(name).substr(at + kTempInfix.size());
  const std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == rest.size()) return 0;
  long long pid = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + dash, pid);
  if (ec != std::errc() || p != rest.data() + dash || pid <= 0) return 0;
  for (char c : rest.substr(dash + 1)) {
    if (c < '0' || c > '9') return 0;
  }
  return static_cast<pid_t>(pid);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now; the errno of a failed close, else 0.
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

}  // namespace

// Per-worker state: the O_DIRECT bounce buffer.
struct FsConnector::Worker {
  std::shared_ptr<std::byte> bounce;
  std::size_t bounce_size = 0;

  std::byte* bounce_of(std::size_t n) {
    if (n > bounce_size) {
      bounce = allocate_host_buffer(n, BufferFill::kUninitialized);
      bounce_size = n;
    }
    return bounce.get();
  }
};

FsConnector::FsConnector(FsConnectorOptions options)
    : BatchConnectorBase(options.num_workers, "fs", options.reads), options_(std::move(options)) {
  if (options_.base_path.empty()) throw std::invalid_argument("FsConnector: base_path is empty");
  if (options_.layout == FsLayout::kLmcache && options_.checksum != FsChecksum::kNone) {
    throw std::invalid_argument(
        "FsConnector: LMCache's layout stores LMCache's raw files: checksum must be none");
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.base_path, ec);
  if (ec) {
    throw std::system_error(
        ec, "FsConnector: cannot create base_path '" + options_.base_path.string() + "'");
  }
  if (!std::filesystem::is_directory(options_.base_path, ec)) {
    throw std::system_error(
        ec ? ec : std::make_error_code(std::errc::not_a_directory),
        "FsConnector: base_path '" + options_.base_path.string() + "' is not a directory");
  }
  if (options_.disk_guard.enabled()) {
    disk_guard_ =
        std::make_unique<DiskGuard>(options_.disk_guard, DiskGuard::statvfs_of(options_.base_path));
  }
  stale_temps_removed_ = sweep_stale_temps();
  for (std::size_t w = 0; w < total_workers(); ++w)
    worker_state_.push_back(std::make_unique<Worker>());
  start_workers();
}

FsConnector::~FsConnector() { close(); }

std::filesystem::path FsConnector::path_for(const std::string& key) const {
  if (options_.layout == FsLayout::kProject) return object_path(options_.base_path, key);
  // LMCache's layout names the ObjectKey the bridge encoded; "<namespace>+" becomes a directory.
  const std::size_t plus = key.find('+');
  const std::string ns = plus == std::string::npos ? std::string() : key.substr(0, plus);
  std::optional<ObjectKey> object;
  if (bridge::KeyCodec::is_valid_namespace(ns)) object = bridge::KeyCodec(ns).decode(key);
  if (!object) {
    throw std::invalid_argument("fs (LMCache layout): '" + key + "' is no object key string");
  }
  const std::string name = lmcache_file_name(*object);
  // A name LMCache cannot store at all (a NUL from the model name, more than 255 bytes) gets
  // this project's path: split into directories, distinct from every flat LMCache name.
  if (name.find('\0') != std::string::npos) return object_path(options_.base_path, key);
  const std::filesystem::path dir = ns.empty() ? options_.base_path : options_.base_path / ns;
  if (name.size() > kMaxLmcacheFileNameBytes) {
    return object_path(dir, name.substr(0, name.size() - std::string_view(".data").size()));
  }
  return dir / name;
}

std::filesystem::path FsConnector::object_path(const std::filesystem::path& base_path,
                                               const std::string& key) {
  if (key.size() <= kMaxNameBytes) return base_path / (key + ".data");
  std::filesystem::path p = base_path;
  for (std::size_t pos = 0; pos < key.size(); pos += kComponentBytes) {
    std::string part = key.substr(pos, kComponentBytes);
    if (pos + kComponentBytes >= key.size()) part += ".data";
    p /= part;
  }
  return p;
}

std::size_t FsConnector::sweep_stale_temps() {
  std::size_t removed = 0;
  std::error_code ec;
  const pid_t self = ::getpid();
  for (auto it = std::filesystem::recursive_directory_iterator(
           options_.base_path, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const pid_t owner = temp_owner(it->path().filename().string());
    // kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: it exists).
    if (owner == 0 || owner == self || ::kill(owner, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (std::filesystem::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

int FsConnector::open_file(const std::filesystem::path& path, int flags, bool* direct) {
  *direct = false;
  if (options_.use_odirect && !odirect_fell_back_.load(std::memory_order_relaxed)) {
    const int fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
    if (fd >= 0) {
      *direct = true;
      return fd;
    }
    if (errno != EINVAL) return -1;
    if ((flags & O_CREAT) != 0) {
      // The file system has no O_DIRECT (tmpfs). The open may have created the file before
      // refusing: it is our own unique temporary name, so remove it and retry buffered.
      odirect_fell_back_.store(true, std::memory_order_relaxed);
      ::unlink(path.c_str());
    } else {
      // Either the file system has no O_DIRECT or what is at the path is no regular file (a
      // FIFO, a directory refuse O_DIRECT too): only a regular file opened buffered says which.
      const int buffered = ::open(path.c_str(), flags, 0644);
      struct stat st {};
      if (buffered >= 0 && ::fstat(buffered, &st) == 0 && S_ISREG(st.st_mode)) {
        odirect_fell_back_.store(true, std::memory_order_relaxed);
      }
      return buffered;  // errno is open's when it failed
    }
  }
  return ::open(path.c_str(), flags, 0644);
}

bool FsConnector::get_one(Worker& w, const std::string& key, void* buf, std::size_t len,
                          std::string* error) {
  const std::filesystem::path path = path_for(key);
  auto note = [&](std::string text) {
    if (error->empty()) *error = path.string() + ": " + std::move(text);
  };
  bool direct = false;
  // O_NONBLOCK: opening a FIFO put in place of an object must not wait for a writer (it would
  // hold this worker, and close() joining it, forever); O_NOFOLLOW: a symbolic link is not an
  // object (one to /dev/zero would read as endless zeros). Both are checked before any read.
  Fd fd(open_file(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, &direct));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return false;  // absent: a plain miss
    // ELOOP (a symbolic link), ENXIO (a socket): say what is there rather than the errno.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      note(what_is(st.st_mode));
    } else {
      note("open: " + errno_text(err));
    }
    return false;
  }
  const bool crc = options_.checksum == FsChecksum::kCrc32;
  const std::size_t expected = len + (crc ? kTrailerBytes : 0);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    note("fstat: " + errno_text(errno));
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    note(what_is(st.st_mode));
    return false;  // checked before any read: the destination stays untouched
  }
  if (static_cast<std::uint64_t>(st.st_size) != expected) {
    note("holds " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(expected));
    return false;  // idem
  }
  // A regular file: blocking reads from here on, as for any object.
  if (const int fl = ::fcntl(fd.get(), F_GETFL);
      fl < 0 || ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK) != 0) {
    note("fcntl: " + errno_text(errno));
    return false;
  }
  unsigned char trailer[kTrailerBytes] = {};
  std::size_t got = 0;
  if (!direct) {
    if (int err = pread_some(fd.get(), buf, len, 0, &got); err != 0 || got != len) {
      note("read: " + errno_text(err != 0 ? err : EIO));
      return false;
    }
    if (crc) {
      if (int err = pread_some(fd.get(), trailer, kTrailerBytes, static_cast<off_t>(len), &got);
          err != 0 || got != kTrailerBytes) {
        note("read trailer: " + errno_text(err != 0 ? err : EIO));
        return false;
      }
    }
  } else {
    // The aligned head in place, the tail (and trailer) through the bounce buffer.
    const std::size_t head = is_aligned(buf) ? len / kDirectAlignment * kDirectAlignment : 0;
    if (head > 0) {
      if (int err = pread_some(fd.get(), buf, head, 0, &got); err != 0 || got != head) {
        note("read: " + errno_text(err != 0 ? err : EIO));
        return false;
      }
    }
    const std::size_t rest = expected - head;
    if (rest > 0) {
      std::byte* bounce = w.bounce_of(round_up(rest, kDirectAlignment));
      if (int err = pread_some(fd.get(), bounce, round_up(rest, kDirectAlignment),
                               static_cast<off_t>(head), &got);
          err != 0 || got < rest) {
        note("read: " + errno_text(err != 0 ? err : EIO));
        return false;
      }
      std::memcpy(static_cast<char*>(buf) + head, bounce, len - head);
      if (crc) std::memcpy(trailer, bounce + (len - head), kTrailerBytes);
    }
  }
  if (crc) {
    const std::optional<std::uint32_t> stored = parse_trailer(trailer);
    if (!stored || *stored != crc32_of(key, buf, len)) {
      checksum_failures_.fetch_add(1, std::memory_order_relaxed);
      note(stored ? "checksum mismatch (damaged bytes, or another key's object)"
                  : "no LMC2 checksum trailer");
      return false;
    }
  }
  return true;
}

void FsConnector::set_one(Worker& w, const std::string& key, const void* buf, std::size_t len) {
  const std::filesystem::path path = path_for(key);
  const std::filesystem::path dir = path.parent_path();
  // The object's file name, cut so that the temporary name fits the 255-byte limit even for a
  // key of kMaxNameBytes (pid and counter make it unique, the cut prefix only says whose it is).
  const std::string tmp = (dir / path.filename().string().substr(0, kMaxTempPrefixBytes)).string() +
                          std::string(kTempInfix) + std::to_string(::getpid()) + "-" +
                          std::to_string(temp_counter_.fetch_add(1));
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(what + " " + tmp + ": " + errno_text(err));
  };
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  bool direct = false;
  int raw = open_file(tmp, flags, &direct);
  if (raw < 0 && errno == ENOENT && dir != options_.base_path) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);  // a long key's directories
    raw = open_file(tmp, flags, &direct);
  }
  if (raw < 0) throw std::runtime_error("create " + tmp + ": " + errno_text(errno));
  Fd fd(raw);
  const bool crc = options_.checksum == FsChecksum::kCrc32;
  unsigned char trailer[kTrailerBytes];
  if (crc) make_trailer(crc32_of(key, buf, len), trailer);
  const std::size_t total = len + (crc ? kTrailerBytes : 0);
  if (!direct) {
    if (int err = pwrite_all(fd.get(), buf, len, 0); err != 0) fail("write", err);
    if (crc) {
      if (int err = pwrite_all(fd.get(), trailer, kTrailerBytes, static_cast<off_t>(len));
          err != 0) {
        fail("write", err);
      }
    }
  } else {
    const std::size_t head = is_aligned(buf) ? len / kDirectAlignment * kDirectAlignment : 0;
    if (head > 0) {
      if (int err = pwrite_all(fd.get(), buf, head, 0); err != 0) fail("write", err);
    }
    const std::size_t rest = total - head;
    if (rest > 0) {
      const std::size_t rounded = round_up(rest, kDirectAlignment);
      std::byte* bounce = w.bounce_of(rounded);
      std::memcpy(bounce, static_cast<const char*>(buf) + head, len - head);
      if (crc) std::memcpy(bounce + (len - head), trailer, kTrailerBytes);
      std::memset(bounce + rest, 0, rounded - rest);
      if (int err = pwrite_all(fd.get(), bounce, rounded, static_cast<off_t>(head)); err != 0) {
        fail("write", err);
      }
      if (::ftruncate(fd.get(), static_cast<off_t>(total)) != 0) fail("truncate", errno);
    }
  }
  if (int err = fd.close(); err != 0) fail("close", err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename to " + path.string() + " from", errno);
}

bool FsConnector::exists_one(const std::string& key) {
  const std::filesystem::path path = path_for(key);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return S_ISREG(st.st_mode);  // as a load sees it
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw std::runtime_error("stat " + path.string() + ": " + errno_text(errno));
}

bool FsConnector::delete_one(const std::string& key) {
  const std::filesystem::path path = path_for(key);
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  throw std::runtime_error("unlink " + path.string() + ": " + errno_text(errno));
}

void FsConnector::run_tile(std::size_t worker, Tile& tile) {
  Worker& w = *worker_state_[worker];
  if (tile.op == Op::kSet && disk_guard_) {
    const std::uint64_t trailer = options_.checksum == FsChecksum::kCrc32 ? kTrailerBytes : 0;
    std::uint64_t bytes = 0;
    for (std::size_t len : tile.lens) bytes += len + trailer;
    std::string why;
    if (!disk_guard_->try_reserve(bytes, &why)) throw std::runtime_error(why);  // the batch fails
  }
  for (std::size_t i = 0; i < tile.keys.size(); ++i) {
    if (stopping()) throw std::runtime_error("connector closing");
    switch (tile.op) {
      case Op::kGet:
        tile.results[i] = get_one(w, tile.keys[i], tile.bufs[i], tile.lens[i], &tile.error);
        break;
      case Op::kSet:
        set_one(w, tile.keys[i], tile.bufs[i], tile.lens[i]);  // throws: the batch fails
        tile.results[i] = 1;
        break;
      case Op::kExists:
        tile.results[i] = exists_one(tile.keys[i]);
        break;
      case Op::kDelete:
        tile.results[i] = delete_one(tile.keys[i]);
        break;
    }
  }
}

Json FsConnector::status_extra() const {
  Json s{{"base_path", options_.base_path.string()},
         {"checksum", options_.checksum == FsChecksum::kCrc32 ? "crc32" : "none"},
         {"use_odirect", options_.use_odirect},
         {"odirect_fell_back", odirect_fell_back()},
         {"checksum_failures", checksum_failures_.load(std::memory_order_relaxed)}};
  if (disk_guard_) s["disk_guard"] = disk_guard_->status();
  return s;
}

}  // namespace lmcache::fs
