// damage_file(): each kind leaves what it says at the object's path (so that the fs tests that
// rely on it test what they claim), and refuses what it cannot do here with a reason.
#include "lmcache/testing/fs_damage.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "lmcache/testing/temp_dir.h"

namespace lmcache::storage_testing {
namespace {

void write_file(const std::filesystem::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class FsDamageKinds : public ::testing::TestWithParam<FsDamageInfo> {};

TEST_P(FsDamageKinds, LeavesWhatItSays) {
  const FsDamageInfo& d = GetParam();
  TempDir dir;
  const std::filesystem::path file = dir.path() / "k.data", donor = dir.path() / "d.data";
  const std::string original(100, 'a'), other(100, 'b');
  write_file(file, original);
  write_file(donor, other);
  const std::string why_not = damage_file(file, d.kind, donor);
  if (!why_not.empty()) {
    EXPECT_EQ(read_file(file), original) << "a damage it could not do changed the file";
    GTEST_SKIP() << d.name << " cannot be done here: " << why_not;
  }
  struct stat st {};
  ASSERT_EQ(::lstat(file.c_str(), &st), 0);
  switch (d.kind) {
    case FsDamage::kTruncated:
      EXPECT_EQ(read_file(file), original.substr(0, 50));
      break;
    case FsDamage::kExtended:
      EXPECT_EQ(read_file(file).size(), 101u);
      break;
    case FsDamage::kFlipped: {
      const std::string now = read_file(file);
      ASSERT_EQ(now.size(), original.size());
      int differ = 0;
      for (std::size_t i = 0; i < now.size(); ++i) differ += now[i] != original[i];
      EXPECT_EQ(differ, 1);
      break;
    }
    case FsDamage::kSwapped:
      EXPECT_EQ(read_file(file), other);
      break;
    case FsDamage::kFifo:
      EXPECT_TRUE(S_ISFIFO(st.st_mode));
      break;
    case FsDamage::kDirectory:
      EXPECT_TRUE(S_ISDIR(st.st_mode));
      break;
    case FsDamage::kSymlink:
      EXPECT_TRUE(S_ISLNK(st.st_mode));
      EXPECT_EQ(std::filesystem::read_symlink(file), "/dev/zero");
      break;
    case FsDamage::kSocket:
      EXPECT_TRUE(S_ISSOCK(st.st_mode));
      break;
    case FsDamage::kCharDevice:
      EXPECT_TRUE(S_ISCHR(st.st_mode));
      EXPECT_FALSE(std::filesystem::exists(file.string() + ".mknod-probe"));
      break;
    case FsDamage::kUnreadable:
      EXPECT_EQ(st.st_mode & 0777, 0u);
      EXPECT_NE(::access(file.c_str(), R_OK), 0);
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(All, FsDamageKinds, ::testing::ValuesIn(fs_damages()),
                         [](const auto& info) { return info.param.name; });

TEST(FsDamage, SwapNeedsADonorOfTheSameLength) {
  TempDir dir;
  write_file(dir.path() / "k.data", std::string(100, 'a'));
  write_file(dir.path() / "d.data", std::string(99, 'b'));
  EXPECT_THROW(damage_file(dir.path() / "k.data", FsDamage::kSwapped, dir.path() / "d.data"),
               std::runtime_error);
  EXPECT_THROW(damage_file(dir.path() / "absent.data", FsDamage::kFifo), std::runtime_error);
}

}  // namespace
}  // namespace lmcache::storage_testing
