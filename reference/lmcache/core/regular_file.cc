#include "lmcache/core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace lmcache {

namespace {

constexpr const char* kOutputRule =
    "output files are written only where a regular file or nothing is";

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// What a file is, as "a directory", "a character device", ...
std::string what_is(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "of an unknown file type";
}

[[noreturn]] void throw_errno(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

// The directory part of `path` ("." for a bare name).
std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void check_output_path(const std::string& path) {
  if (path.empty()) throw std::invalid_argument("'' is not a file name");
  if (path.back() == '/') {
    throw std::invalid_argument(quoted(path) + " names a directory, not a file: " + kOutputRule);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
      const std::string to = n > 0 ? " to " + quoted(std::string(target, n)) : "";
      throw std::invalid_argument(quoted(path) + " is a symbolic link" + to +
                                  ": output files are never written through a symbolic link; "
                                  "name the file itself");
    }
    throw std::invalid_argument(quoted(path) + " is " + what_is(st.st_mode) +
                                ", not a regular file: " + kOutputRule);
  }
  // ENOTDIR: the directory part names a file; said below.
  if (errno != ENOENT && errno != ENOTDIR) {
    throw std::invalid_argument(quoted(path) +
                                " cannot be examined: " + std::generic_category().message(errno));
  }
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) {
    const int error = errno;
    throw std::invalid_argument(
        quoted(path) + ": its directory " + quoted(dir) +
        (error == ENOENT ? " does not exist"
                         : " cannot be examined: " + std::generic_category().message(error)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw std::invalid_argument(quoted(path) + ": " + quoted(dir) + " is " + what_is(st.st_mode) +
                                ", not a directory");
  }
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  check_output_path(path_);
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    temp_path_ = path_ + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ >= 0) return;
    // A leftover of an earlier process with the same pid: take the next name.
    if (errno != EEXIST || attempt >= 100) {
      throw_errno(errno, "cannot create " + quoted(temp_path_) + " to write " + quoted(path_));
    }
  }
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void OutputFile::write(std::string_view bytes) {
  if (committed_) throw std::logic_error("OutputFile::write after commit of " + quoted(path_));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(errno, "cannot write " + quoted(temp_path_) + " (for " + quoted(path_) + ")");
    }
    done += static_cast<std::size_t>(n);
  }
}

void OutputFile::commit() {
  if (committed_) throw std::logic_error("OutputFile::commit called twice for " + quoted(path_));
  auto fail = [&](int error, const std::string& step) {
    discard();
    throw_errno(error, step);
  };
  // fsync before rename: after a crash the name must not point at an empty file.
  if (::fsync(fd_) != 0) fail(errno, "cannot fsync " + quoted(temp_path_));
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(errno, "cannot close " + quoted(temp_path_));
  try {
    check_output_path(path_);
  } catch (...) {
    discard();
    throw;
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    fail(errno, "cannot rename " + quoted(temp_path_) + " to " + quoted(path_));
  }
  committed_ = true;
}

void write_output_file(const std::string& path, std::string_view content) {
  OutputFile file(path);
  file.write(content);
  file.commit();
}

std::string read_regular_file(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    throw std::invalid_argument(quoted(path) +
                                " cannot be opened: " + std::generic_category().message(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw std::invalid_argument(quoted(path) +
                                " cannot be examined: " + std::generic_category().message(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw std::invalid_argument(quoted(path) + " is " + what_is(st.st_mode) +
                                ", not a regular file");
  }
  auto too_large = [&](const std::string& size) {
    return std::invalid_argument(quoted(path) + " holds " + size + " bytes, more than the " +
                                 std::to_string(max_bytes) + " allowed");
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    throw too_large(std::to_string(st.st_size));
  }
  // Read past the size fstat() gave, up to one byte past the limit: a file that grew since is
  // refused too.
  const std::size_t cap = max_bytes < SIZE_MAX ? max_bytes + 1 : max_bytes;
  std::string out;
  std::size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (out.size() == cap) break;
      out.resize(std::min(cap, std::max<std::size_t>(static_cast<std::size_t>(st.st_size) + 1,
                                                     out.size() + (std::size_t{1} << 16))));
    }
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::invalid_argument(quoted(path) +
                                  " cannot be read: " + std::generic_category().message(errno));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done > max_bytes) throw too_large("more than " + std::to_string(max_bytes));
  out.resize(done);
  return out;
}

}  // namespace lmcache
