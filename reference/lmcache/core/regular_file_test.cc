#include "lmcache/core/regular_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace lmcache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A fresh directory under $TMPDIR, removed with the fixture.
class RegularFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "regular_file_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string at(const std::string& name) const { return (dir_ / name).string(); }

  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  static void write(const std::string& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
  }

  std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }

  // The message of the std::invalid_argument that `f` throws ("" when it throws none).
  template <class F>
  static std::string refusal(F&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(RegularFile, AnOutputMayBeNothingYetOrARegularFile) {
  EXPECT_NO_THROW(check_output_path(at("new.json")));
  write(at("old.json"), "old");
  EXPECT_NO_THROW(check_output_path(at("old.json")));
}

TEST_F(RegularFile, AnOutputIsNeverADirectoryADeviceAFifoOrASymlink) {
  fs::create_directory(at("sub"));
  EXPECT_THAT(refusal([&] { check_output_path(at("sub")); }),
              AllOf(StartsWith("'" + at("sub") + "'"), HasSubstr("is a directory")));
  EXPECT_THAT(refusal([&] { check_output_path(at("sub") + "/"); }), HasSubstr("names a directory"));
  EXPECT_THAT(refusal([] { check_output_path("/dev/null"); }),
              HasSubstr("'/dev/null' is a character device, not a regular file"));
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_THAT(refusal([&] { check_output_path(at("fifo")); }), HasSubstr("is a FIFO"));
  // A symbolic link is refused whatever it points at: a regular file, nothing, elsewhere.
  write(at("target"), "t");
  fs::create_symlink(at("target"), at("link"));
  EXPECT_THAT(refusal([&] { check_output_path(at("link")); }),
              HasSubstr("is a symbolic link to '" + at("target") + "'"));
  fs::create_symlink(at("missing"), at("dangling"));
  EXPECT_THAT(refusal([&] { check_output_path(at("dangling")); }), HasSubstr("is a symbolic link"));
}

TEST_F(RegularFile, AnOutputNeedsAnExistingDirectory) {
  EXPECT_THAT(refusal([&] { check_output_path(at("missing/out.json")); }),
              HasSubstr("its directory '" + at("missing") + "' does not exist"));
  write(at("file"), "f");
  EXPECT_THAT(refusal([&] { check_output_path(at("file/out.json")); }),
              HasSubstr("is a regular file, not a directory"));
  EXPECT_THAT(refusal([] { check_output_path(""); }), HasSubstr("not a file name"));
}

TEST_F(RegularFile, WriteOutputFileReplacesAndLeavesNoTemporary) {
  write_output_file(at("m.prom"), "a 1\n");
  EXPECT_EQ(read(at("m.prom")), "a 1\n");
  write_output_file(at("m.prom"), "b 2\n");
  EXPECT_EQ(read(at("m.prom")), "b 2\n");
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(at("m.prom").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~mask);
  EXPECT_EQ(entries(), 1u);  // no <path>.tmp.* left behind
}

TEST_F(RegularFile, WriteOutputFileRefusalsChangeNothing) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_THROW(write_output_file(at("fifo"), "x"), std::invalid_argument);
  EXPECT_TRUE(fs::is_fifo(at("fifo")));
  write(at("target"), "kept");
  fs::create_symlink(at("target"), at("link"));
  EXPECT_THROW(write_output_file(at("link"), "x"), std::invalid_argument);
  EXPECT_TRUE(fs::is_symlink(at("link")));
  EXPECT_EQ(read(at("target")), "kept");
  fs::create_directories(at("dir/inside"));
  EXPECT_THROW(write_output_file(at("dir"), "x"), std::invalid_argument);
  EXPECT_TRUE(fs::is_directory(at("dir/inside")));
  EXPECT_THROW(write_output_file("/dev/null", "x"), std::invalid_argument);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_EQ(entries(), 4u);  // fifo, target, link, dir: no temporary left
}

TEST_F(RegularFile, OutputFileKeepsThePathUntilCommit) {
  write(at("out.json"), "old");
  {
    OutputFile file(at("out.json"));
    EXPECT_THAT(file.temp_path(), StartsWith(at("out.json") + ".tmp."));
    file.write("new");
    EXPECT_EQ(read(at("out.json")), "old");
    // Another writer may fill the temporary file by name (as Google Benchmark does).
    std::ofstream(file.temp_path(), std::ios::app) << " and more";
    file.commit();
    EXPECT_THROW(file.commit(), std::logic_error);
    EXPECT_THROW(file.write("x"), std::logic_error);
  }
  EXPECT_EQ(read(at("out.json")), "new and more");
  { OutputFile abandoned(at("out.json")); }  // destroyed without commit
  EXPECT_EQ(read(at("out.json")), "new and more");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(RegularFile, CommitChecksThePathAgain) {
  OutputFile file(at("out.json"));
  file.write("x");
  ASSERT_EQ(::mkfifo(at("out.json").c_str(), 0600), 0);  // appeared meanwhile
  EXPECT_THAT(refusal([&] { file.commit(); }), HasSubstr("is a FIFO"));
  EXPECT_TRUE(fs::is_fifo(at("out.json")));
  EXPECT_EQ(entries(), 1u);  // the temporary is gone
}

// /proc takes no new file, whoever asks (root included).
TEST_F(RegularFile, CreateFailureNamesTheTemporary) {
  const std::string path = "/proc/regular_file_test.json";
  ASSERT_NO_THROW(check_output_path(path));
  try {
    write_output_file(path, "x");
    ADD_FAILURE() << "expected std::system_error";
  } catch (const std::system_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot create '" + path + ".tmp."));
  }
}

// Two complete versions, large enough that a non-atomic write would be caught half-done.
TEST_F(RegularFile, AReaderNeverSeesAPartialOutput) {
  const std::string a(1 << 20, 'a');
  const std::string b(1 << 20, 'b');
  write_output_file(at("m.prom"), a);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop.load() || reads.load() == 0) {
      const std::string s = read(at("m.prom"));
      if (s != a && s != b) bad.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  for (int i = 0; i < 40; ++i) write_output_file(at("m.prom"), i % 2 ? a : b);
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(RegularFile, ReadRegularFileReadsUpToTheLimit) {
  write(at("key"), "0123456789");
  EXPECT_EQ(read_regular_file(at("key"), 10), "0123456789");
  EXPECT_EQ(read_regular_file(at("key"), 4096), "0123456789");
  write(at("empty"), "");
  EXPECT_EQ(read_regular_file(at("empty"), 10), "");
  EXPECT_THAT(refusal([&] { read_regular_file(at("key"), 9); }),
              HasSubstr("holds 10 bytes, more than the 9 allowed"));
}

TEST_F(RegularFile, ReadRegularFileNamesWhatIsThere) {
  EXPECT_THAT(refusal([&] { read_regular_file(dir_.string(), 4096); }),
              HasSubstr("is a directory, not a regular file"));
  // /dev/zero never ends: it must be refused before anything is read.
  EXPECT_THAT(refusal([] { read_regular_file("/dev/zero", 4096); }),
              HasSubstr("'/dev/zero' is a character device"));
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_THAT(refusal([&] { read_regular_file(at("fifo"), 4096); }), HasSubstr("is a FIFO"));
  EXPECT_THAT(refusal([&] { read_regular_file(at("missing"), 4096); }),
              AllOf(StartsWith("'" + at("missing") + "'"),
                    HasSubstr("cannot be opened: No such file or directory")));
}

}  // namespace
}  // namespace lmcache
