#include "lmcache/testing/temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>

namespace lmcache::storage_testing {
namespace {

TEST(TempDir, IsFreshAndRemovedWithItsContents) {
  std::filesystem::path kept;
  {
    TempDir a("lmcache-tempdir-test-");
    TempDir b("lmcache-tempdir-test-");
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(std::filesystem::is_directory(a.path()));
    EXPECT_TRUE(std::filesystem::is_empty(a.path()));
    std::filesystem::create_directories(a.path() / "x" / "y");
    std::ofstream(a.path() / "x" / "y" / "f") << "data";
    std::filesystem::permissions(
        a.path() / "x", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    kept = a.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace lmcache::storage_testing
