// File: lmcache/testing/temp_dir.h
//
// TempDir: a fresh directory under $TMPDIR (or /tmp), removed with everything in it when the
// object goes. Test support for the fs connector, the redis-server fixture and fault campaigns.
#pragma once

#include <filesystem>
#include <string>

namespace lmcache::storage_testing {

class TempDir {
 public:
  // TempDir()
  //
  // Creates "<root>/<prefix>XXXXXX" with mkdtemp(3), <root> being `root`, else $TMPDIR, else
  // /tmp. Throws std::system_error when it cannot.
  explicit TempDir(const std::string& prefix = "lmcache-", std::filesystem::path root = {});
  // Removes the directory recursively; errors are ignored (a test must not fail in cleanup).
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace lmcache::storage_testing
