#include "lmcache/testing/fs_damage.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace lmcache::storage_testing {

namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what, int err) {
  throw std::runtime_error("damage_file " + file.string() + ": " + what + ": " +
                           std::strerror(err));
}

std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot read", errno);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out.flush()) fail(file, "cannot write", errno);
}

void remove_file(const std::filesystem::path& file) {
  if (::unlink(file.c_str()) != 0) fail(file, "unlink", errno);
}

}  // namespace

const std::vector<FsDamageInfo>& fs_damages() {
  static const std::vector<FsDamageInfo> kinds = {
      {FsDamage::kTruncated, "truncated", "bytes, expected"},
      {FsDamage::kExtended, "extended", "bytes, expected"},
      {FsDamage::kFlipped, "flipped", "checksum mismatch", false, false},
      {FsDamage::kSwapped, "swapped", "checksum mismatch", false, false},
      {FsDamage::kFifo, "fifo", "is a FIFO"},
      {FsDamage::kDirectory, "directory", "is a directory"},
      {FsDamage::kSymlink, "symlink_to_dev_zero", "is a symbolic link"},
      {FsDamage::kSocket, "socket", "is a socket"},
      {FsDamage::kCharDevice, "char_device", "is a character device"},
      {FsDamage::kUnreadable, "unreadable", "Permission denied"},
  };
  return kinds;
}

std::string damage_file(const std::filesystem::path& file, FsDamage kind,
                        const std::filesystem::path& donor) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) throw std::runtime_error("damage_file " + file.string() + ": " + ec.message());
  switch (kind) {
    case FsDamage::kTruncated:
      std::filesystem::resize_file(file, size / 2);
      return "";
    case FsDamage::kExtended:
      std::filesystem::resize_file(file, size + 1);
      return "";
    case FsDamage::kFlipped: {
      std::string bytes = read_all(file);
      if (bytes.empty()) throw std::runtime_error("damage_file " + file.string() + ": empty");
      bytes[bytes.size() / 3] ^= 0x01;  // in the payload, whatever the trailer
      write_all(file, bytes);
      return "";
    }
    case FsDamage::kSwapped: {
      const std::string bytes = read_all(donor);
      if (bytes.size() != size) {
        throw std::runtime_error("damage_file: donor " + donor.string() + " has " +
                                 std::to_string(bytes.size()) + " bytes, " + file.string() + " " +
                                 std::to_string(size));
      }
      write_all(file, bytes);
      return "";
    }
    case FsDamage::kFifo:
      remove_file(file);
      if (::mkfifo(file.c_str(), 0644) != 0) fail(file, "mkfifo", errno);
      return "";
    case FsDamage::kDirectory:
      remove_file(file);
      if (::mkdir(file.c_str(), 0755) != 0) fail(file, "mkdir", errno);
      return "";
    case FsDamage::kSymlink:
      remove_file(file);
      if (::symlink("/dev/zero", file.c_str()) != 0) fail(file, "symlink", errno);
      return "";
    case FsDamage::kSocket: {
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      if (file.string().size() >= sizeof(addr.sun_path)) {
        throw std::runtime_error("damage_file " + file.string() + ": too long for a socket path");
      }
      std::memcpy(addr.sun_path, file.c_str(), file.string().size() + 1);
      remove_file(file);
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) fail(file, "socket", errno);
      const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      const int err = errno;
      ::close(fd);  // the socket file stays; nobody listens on it
      if (rc != 0) fail(file, "bind", err);
      return "";
    }
    case FsDamage::kCharDevice: {
      // Probe beside the file first, so that the object is left intact where mknod is refused.
      const std::filesystem::path probe = file.string() + ".mknod-probe";
      if (::mknod(probe.c_str(), S_IFCHR | 0644, makedev(1, 5)) != 0) {
        const int err = errno;
        if (err == EPERM || err == EACCES) {
          return std::string("mknod of a character device refused here: ") + std::strerror(err);
        }
        fail(file, "mknod", err);
      }
      if (::rename(probe.c_str(), file.c_str()) != 0) {
        const int err = errno;
        ::unlink(probe.c_str());
        fail(file, "rename", err);
      }
      return "";
    }
    case FsDamage::kUnreadable: {
      if (::chmod(file.c_str(), 0) != 0) fail(file, "chmod", errno);
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {  // root (CAP_DAC_OVERRIDE): the mode binds nothing
        ::close(fd);
        ::chmod(file.c_str(), 0644);
        return "permissions bind nothing for this process (running as root)";
      }
      return "";
    }
  }
  throw std::logic_error("damage_file: unknown kind");
}

}  // namespace lmcache::storage_testing
