#include "lmcache/storage_fault/storage_faults.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "lmcache/testing/redis_server.h"

namespace lmcache::fault {
namespace {

struct KindInfo {
  StorageFaultKind kind;
  std::string_view name;
  std::string_view adapter;
};

constexpr std::array<KindInfo, 9> kKinds = {{
    {StorageFaultKind::kRedisKill, "redis_kill", "resp"},
    {StorageFaultKind::kRedisPause, "redis_pause", "resp"},
    {StorageFaultKind::kRedisClientKill, "redis_client_kill", "resp"},
    {StorageFaultKind::kRedisMaxmemory, "redis_maxmemory", "resp"},
    {StorageFaultKind::kFsFull, "fs_full", "fs"},
    {StorageFaultKind::kFsTruncate, "fs_truncate", "fs"},
    {StorageFaultKind::kFsFlip, "fs_flip", "fs"},
    {StorageFaultKind::kFsDelete, "fs_delete", "fs"},
    {StorageFaultKind::kFsUnwritable, "fs_unwritable", "fs"},
}};

const KindInfo& info(StorageFaultKind kind) {
  for (const KindInfo& k : kKinds) {
    if (k.kind == kind) return k;
  }
  throw std::invalid_argument("storage fault kind " + std::to_string(static_cast<int>(kind)) +
                              " is unknown");
}

void check_reply(const resp::RespReply& r, const char* what) {
  if (r.is_error()) throw std::runtime_error(std::string(what) + ": " + r.to_string());
}

}  // namespace

std::string_view storage_fault_name(StorageFaultKind kind) { return info(kind).name; }

std::optional<StorageFaultKind> storage_fault_from_name(std::string_view name) {
  for (const KindInfo& k : kKinds) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

const std::vector<StorageFaultKind>& all_storage_fault_kinds() {
  static const std::vector<StorageFaultKind> kinds = [] {
    std::vector<StorageFaultKind> v;
    for (const KindInfo& k : kKinds) v.push_back(k.kind);
    return v;
  }();
  return kinds;
}

std::string_view storage_fault_adapter_type(StorageFaultKind kind) { return info(kind).adapter; }

std::int64_t redis_client_kill(const storage_testing::RedisServer& server) {
  const resp::RespReply r = server.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  check_reply(r, "CLIENT KILL");
  return r.integer;
}

void redis_set_maxmemory(const storage_testing::RedisServer& server, std::uint64_t bytes) {
  check_reply(server.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}),
              "CONFIG SET maxmemory-policy");
  const std::string n = std::to_string(bytes);
  check_reply(server.command({"CONFIG", "SET", "maxmemory", n}), "CONFIG SET maxmemory");
}

FileSizeLimit::FileSizeLimit(std::uint64_t bytes) {
  if (::getrlimit(RLIMIT_FSIZE, &saved_) != 0) {
    throw std::system_error(errno, std::generic_category(), "getrlimit(RLIMIT_FSIZE)");
  }
  saved_handler_ = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limit = saved_;
  limit.rlim_cur = static_cast<rlim_t>(bytes);
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
    const int err = errno;
    std::signal(SIGXFSZ, saved_handler_);
    throw std::system_error(err, std::generic_category(), "setrlimit(RLIMIT_FSIZE)");
  }
}

FileSizeLimit::~FileSizeLimit() {
  ::setrlimit(RLIMIT_FSIZE, &saved_);
  std::signal(SIGXFSZ, saved_handler_);
}

void flip_byte(const std::filesystem::path& file, std::uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  if (!f) throw std::runtime_error("flip_byte: cannot open " + file.string());
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  if (!f.get(c)) {
    throw std::runtime_error("flip_byte: " + file.string() + " has no byte " +
                             std::to_string(offset));
  }
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x01));
  if (!f.flush()) throw std::runtime_error("flip_byte: cannot write " + file.string());
}

void truncate_file(const std::filesystem::path& file, std::uint64_t size) {
  std::error_code ec;
  const auto now = std::filesystem::file_size(file, ec);
  if (ec) throw std::runtime_error("truncate_file: " + file.string() + ": " + ec.message());
  if (size > now) {
    throw std::runtime_error("truncate_file: " + file.string() + " has only " +
                             std::to_string(now) + " bytes, cannot cut it to " +
                             std::to_string(size));
  }
  std::filesystem::resize_file(file, size, ec);
  if (ec) throw std::runtime_error("truncate_file: " + file.string() + ": " + ec.message());
}

void delete_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::remove(file, ec)) {
    throw std::runtime_error("delete_file: " + file.string() + ": " +
                             (ec ? ec.message() : std::string("no such file")));
  }
}

std::vector<std::filesystem::path> object_files(const std::filesystem::path& base_path) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(base_path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".data") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

UnwritableDir::UnwritableDir(std::filesystem::path dir) : dir_(std::move(dir)) {
  saved_ = std::filesystem::status(dir_).permissions();
  std::filesystem::permissions(
      dir_,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
          std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
          std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
      std::filesystem::perm_options::replace);
  // Probe: root (CAP_DAC_OVERRIDE) writes regardless of the mode.
  const std::filesystem::path probe = dir_ / ".lmcache-unwritable-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    effective_ = false;
  } else {
    effective_ = true;
  }
}

UnwritableDir::~UnwritableDir() {
  std::error_code ec;
  std::filesystem::permissions(dir_, saved_, std::filesystem::perm_options::replace, ec);
}

}  // namespace lmcache::fault
