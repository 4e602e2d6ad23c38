#include "lmcache/testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <vector>

namespace lmcache::storage_testing {

TempDir::TempDir(const std::string& prefix, std::filesystem::path root) {
  if (root.empty()) {
    const char* env = std::getenv("TMPDIR");
    root = env != nullptr && *env != '\0' ? env : "/tmp";
  }
  std::string pattern = (root / (prefix + "XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  // Directories made read-only by a test would stop remove_all: give the owner write back.
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code perm;
    if (it->is_directory(perm)) {
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, perm);
    }
  }
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

}  // namespace lmcache::storage_testing
