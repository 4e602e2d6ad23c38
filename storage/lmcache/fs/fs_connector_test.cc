// FsConnector on real files in temporary directories: layout, atomic writes, the crc32 trailer
// (bound to the key), damage underneath (flipped byte, truncation, deletion, a vanished
// directory, another key's object swapped in, and every kind of storage_testing::fs_damages():
// FIFOs, directories, links, sockets, devices, unreadable files in place of objects), long keys,
// stale temporary files, O_DIRECT, and concurrent writers.
#include "lmcache/fs/fs_connector.h"

#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "lmcache/bridge/key_codec.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/fs/lmcache_file_names.h"
#include "lmcache/testing/connector_waits.h"
#include "lmcache/testing/fs_damage.h"
#include "lmcache/testing/temp_dir.h"

namespace lmcache::fs {
namespace {

using namespace std::chrono_literals;
using bridge::Completion;
using storage_testing::TempDir;

Completion wait_one(FsConnector& c, std::uint64_t id) {
  if (auto done = storage_testing::wait_completion(c, id, 30s)) return *std::move(done);
  ADD_FAILURE() << "batch " << id << " did not complete";
  return Completion{id, false, {}, "timeout"};
}

// Page-aligned buffers (as the bridge's MemoryObjs are), filled with a pattern.
struct Buf {
  std::shared_ptr<std::byte> mem;
  std::size_t size;
  Buf(std::size_t n, std::uint8_t seed) : mem(allocate_host_buffer(n + 1)), size(n) {
    for (std::size_t i = 0; i < n; ++i) data()[i] = static_cast<std::uint8_t>(seed + i * 13);
  }
  std::uint8_t* data() const { return reinterpret_cast<std::uint8_t*>(mem.get()); }
  bool operator==(const Buf& o) const {
    return size == o.size && std::memcmp(data(), o.data(), size) == 0;
  }
};

FsConnectorOptions opts(const TempDir& dir, FsChecksum checksum = FsChecksum::kNone,
                        bool odirect = false) {
  FsConnectorOptions o;
  o.base_path = dir.path() / "cache";
  o.checksum = checksum;
  o.use_odirect = odirect;
  o.num_workers = 2;
  return o;
}

bool set(FsConnector& c, const std::vector<std::string>& keys, const std::vector<Buf>& bufs,
         std::string* error = nullptr) {
  std::vector<void*> ptrs;
  std::vector<std::size_t> lens;
  for (const Buf& b : bufs) {
    ptrs.push_back(b.data());
    lens.push_back(b.size);
  }
  Completion done = wait_one(c, c.submit_batch_set(keys, ptrs, lens, bufs.at(0).size));
  if (error != nullptr) *error = done.error;
  return done.ok;
}

std::vector<std::uint8_t> get(FsConnector& c, const std::vector<std::string>& keys,
                              std::vector<Buf>& bufs, std::string* error = nullptr) {
  std::vector<void*> ptrs;
  std::vector<std::size_t> lens;
  for (Buf& b : bufs) {
    ptrs.push_back(b.data());
    lens.push_back(b.size);
  }
  Completion done = wait_one(c, c.submit_batch_get(keys, ptrs, lens, bufs.at(0).size));
  EXPECT_TRUE(done.ok) << "a get batch failed: " << done.error;
  if (error != nullptr) *error = done.error;
  return done.result_bytes;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::filesystem::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << data;
}

std::vector<std::string> files_under(const std::filesystem::path& root) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(std::filesystem::relative(e.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FsConnector, OneFilePerObjectAndNoTemporaryLeft) {
  TempDir dir;
  FsConnector c(opts(dir));
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "cache")) << "base_path is created";
  ASSERT_TRUE(set(c, {"m@00000000@0@aa", "m@00000000@0@bb"}, {Buf(100, 1), Buf(100, 2)}));
  EXPECT_EQ(files_under(c.options().base_path),
            (std::vector<std::string>{"m@00000000@0@aa.data", "m@00000000@0@bb.data"}));
  EXPECT_EQ(std::filesystem::file_size(c.path_for("m@00000000@0@aa")), 100u);
  std::vector<Buf> out = {Buf(100, 0), Buf(100, 0), Buf(100, 9)};
  EXPECT_EQ(get(c, {"m@00000000@0@bb", "m@00000000@0@aa", "absent"}, out),
            (std::vector<std::uint8_t>{1, 1, 0}));
  EXPECT_EQ(out[0], Buf(100, 2));
  EXPECT_EQ(out[1], Buf(100, 1));
  EXPECT_EQ(out[2], Buf(100, 9)) << "a miss wrote its destination";
  Completion ex = wait_one(c, c.submit_batch_exists({"m@00000000@0@aa", "absent"}));
  EXPECT_EQ(ex.result_bytes, (std::vector<std::uint8_t>{1, 0}));
  Completion del = wait_one(c, c.submit_batch_delete({"m@00000000@0@aa", "absent"}));
  EXPECT_TRUE(del.ok);
  EXPECT_EQ(del.result_bytes, (std::vector<std::uint8_t>{1, 0}));
  EXPECT_EQ(files_under(c.options().base_path), (std::vector<std::string>{"m@00000000@0@bb.data"}));
}

TEST(FsConnector, OverwriteReplacesTheWholeObject) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  ASSERT_TRUE(set(c, {"k"}, {Buf(64, 1)}));
  ASSERT_TRUE(set(c, {"k"}, {Buf(64, 2)}));
  std::vector<Buf> out = {Buf(64, 0)};
  EXPECT_EQ(get(c, {"k"}, out), (std::vector<std::uint8_t>{1}));
  EXPECT_EQ(out[0], Buf(64, 2));
}

TEST(FsConnector, Crc32TrailerIsZlibsCrcOfTheKeyThenTheBytesThenTheMagic) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  Buf payload(1000, 7);
  const std::string key = "m@00000000@0@aa";
  ASSERT_TRUE(set(c, {key}, {payload}));
  const std::string file = read_file(c.path_for(key));
  ASSERT_EQ(file.size(), 1008u);
  EXPECT_EQ(std::memcmp(file.data(), payload.data(), 1000), 0);
  uLong crc = ::crc32(0, reinterpret_cast<const Bytef*>(key.data()), key.size());
  crc = ::crc32(crc, payload.data(), 1000);
  std::uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) {
    stored |= static_cast<std::uint32_t>(static_cast<unsigned char>(file[1000 + i])) << (8 * i);
  }
  EXPECT_EQ(stored, static_cast<std::uint32_t>(crc));
  EXPECT_EQ(file.substr(1004), "LMC2");
}

TEST(FsConnector, AnotherKeysObjectOfTheSameLengthIsAMiss) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  ASSERT_TRUE(set(c, {"a", "b"}, {Buf(4096, 1), Buf(4096, 2)}));
  std::filesystem::copy_file(c.path_for("a"), c.path_for("b"),
                             std::filesystem::copy_options::overwrite_existing);
  std::vector<Buf> out = {Buf(4096, 0), Buf(4096, 0)};
  EXPECT_EQ(get(c, {"a", "b"}, out), (std::vector<std::uint8_t>{1, 0}))
      << "b's path held a's bytes and crc, and loaded as b";
  EXPECT_EQ(out[0], Buf(4096, 1));
  std::vector<Buf> one = {Buf(4096, 0)};
  std::string error;
  EXPECT_EQ(get(c, {"b"}, one, &error), (std::vector<std::uint8_t>{0}));
  EXPECT_NE(error.find("another key's object"), std::string::npos) << error;
  // A rename of a's file to b's name is the same: the bytes are a's.
  std::filesystem::rename(c.path_for("a"), c.path_for("b"));
  EXPECT_EQ(get(c, {"b"}, one), (std::vector<std::uint8_t>{0}));
}

TEST(FsConnector, ObjectsOfTheOlderUnkeyedFormatAreMisses) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  ASSERT_TRUE(set(c, {"k"}, {Buf(100, 1)}));
  // What the previous format wrote: the crc32 of the payload alone, then "LMC1".
  Buf payload(100, 1);
  const auto crc = static_cast<std::uint32_t>(::crc32(0, payload.data(), 100));
  std::string file(reinterpret_cast<const char*>(payload.data()), 100);
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>(crc >> (8 * i)));
  file += "LMC1";
  write_file(c.path_for("k"), file);
  std::vector<Buf> out = {Buf(100, 0)};
  std::string error;
  EXPECT_EQ(get(c, {"k"}, out, &error), (std::vector<std::uint8_t>{0}));
  EXPECT_NE(error.find("no LMC2 checksum trailer"), std::string::npos) << error;
  ASSERT_TRUE(set(c, {"k"}, {Buf(100, 1)})) << "the next store replaces it";
  EXPECT_EQ(get(c, {"k"}, out), (std::vector<std::uint8_t>{1}));
}

TEST(FsConnector, DamageUnderneathIsAMissNeverWrongBytes) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  ASSERT_TRUE(set(c, {"flip", "cut", "gone", "trailer"},
                  {Buf(4096, 1), Buf(4096, 2), Buf(4096, 3), Buf(4096, 4)}));
  std::string flipped = read_file(c.path_for("flip"));
  flipped[1234] ^= 0x01;
  write_file(c.path_for("flip"), flipped);
  std::filesystem::resize_file(c.path_for("cut"), 4000);
  std::filesystem::remove(c.path_for("gone"));
  std::string bad_magic = read_file(c.path_for("trailer"));
  bad_magic.back() = 'X';
  write_file(c.path_for("trailer"), bad_magic);
  std::vector<Buf> out = {Buf(4096, 0), Buf(4096, 9), Buf(4096, 9), Buf(4096, 0)};
  std::string error;
  EXPECT_EQ(get(c, {"flip", "cut", "gone", "trailer"}, out, &error),
            (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(out[1], Buf(4096, 9)) << "a truncated file's destination was written";
  EXPECT_EQ(out[2], Buf(4096, 9));
  EXPECT_EQ(c.report_status()["checksum_failures"], 2);
  // The batch's error keeps one reason (whichever worker finished last), so ask for the
  // flipped object alone to see its reason.
  std::vector<Buf> one = {Buf(4096, 0)};
  std::string flip_error;
  EXPECT_EQ(get(c, {"flip"}, one, &flip_error), (std::vector<std::uint8_t>{0}));
  EXPECT_NE(flip_error.find("checksum mismatch"), std::string::npos) << flip_error;
}

TEST(FsConnector, WithoutChecksumOnlyTheLengthIsChecked) {
  TempDir dir;
  FsConnector c(opts(dir));
  ASSERT_TRUE(
      set(c, {"flip", "cut", "a", "b"}, {Buf(512, 1), Buf(512, 2), Buf(512, 3), Buf(512, 4)}));
  std::string flipped = read_file(c.path_for("flip"));
  flipped[10] ^= 0x01;
  write_file(c.path_for("flip"), flipped);
  std::filesystem::resize_file(c.path_for("cut"), 511);
  std::filesystem::copy_file(c.path_for("a"), c.path_for("b"),
                             std::filesystem::copy_options::overwrite_existing);
  std::vector<Buf> out = {Buf(512, 0), Buf(512, 0), Buf(512, 0)};
  // The documented limits of checksum "none": a flipped byte is loaded as is, and so is another
  // key's object of the same length.
  EXPECT_EQ(get(c, {"flip", "cut", "b"}, out), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_FALSE(out[0] == Buf(512, 1));
  EXPECT_EQ(out[2], Buf(512, 3)) << "b loaded a's bytes, as documented";
}

TEST(FsConnector, LongKeysAreSplitIntoDirectories) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  const std::string long_key(450, 'x');
  const std::string longer_key = long_key + "y";
  const std::string short_key(FsConnector::kComponentBytes, 'x');
  ASSERT_TRUE(set(c, {long_key, longer_key, short_key}, {Buf(10, 1), Buf(10, 2), Buf(10, 3)}));
  for (const std::string& k : {long_key, longer_key}) {
    for (const auto& part : std::filesystem::relative(c.path_for(k), c.options().base_path)) {
      EXPECT_LE(part.string().size(), FsConnector::kComponentBytes + 5) << part;
    }
  }
  std::vector<Buf> out = {Buf(10, 0), Buf(10, 0), Buf(10, 0)};
  EXPECT_EQ(get(c, {long_key, longer_key, short_key}, out), (std::vector<std::uint8_t>{1, 1, 1}));
  EXPECT_EQ(out[0], Buf(10, 1));
  EXPECT_EQ(out[1], Buf(10, 2));
  EXPECT_EQ(out[2], Buf(10, 3));
}

TEST(FsConnector, EveryKeyLengthAroundTheLimitsRoundTrips) {
  // Each length where a name changes shape: the object file name, its temporary name (the
  // object's name plus ".tmp.<pid>-<n>") and the directory split must each stay within 255
  // bytes. A key of kMaxNameBytes once gave a temporary name past the limit (ENAMETOOLONG).
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kCrc32));
  std::vector<std::string> keys;
  for (std::size_t n :
       {std::size_t{1}, FsConnector::kMaxTempPrefixBytes - 1, FsConnector::kMaxTempPrefixBytes,
        FsConnector::kMaxTempPrefixBytes + 1, std::size_t{217}, std::size_t{222}, std::size_t{230},
        FsConnector::kMaxNameBytes - 1, FsConnector::kMaxNameBytes, FsConnector::kMaxNameBytes + 1,
        2 * FsConnector::kComponentBytes, 2 * FsConnector::kComponentBytes + 1,
        std::size_t{1000}}) {
    keys.push_back(std::string(n, 'k'));
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::string error;
    ASSERT_TRUE(set(c, {keys[i]}, {Buf(64, static_cast<std::uint8_t>(i + 1))}, &error))
        << "a key of " << keys[i].size() << " bytes: " << error;
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<Buf> out = {Buf(64, 0)};
    EXPECT_EQ(get(c, {keys[i]}, out), std::vector<std::uint8_t>{1}) << keys[i].size();
    EXPECT_EQ(out[0], Buf(64, static_cast<std::uint8_t>(i + 1))) << keys[i].size();
  }
  for (const std::string& f : files_under(c.options().base_path)) {
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << "a temporary file was left: " << f;
  }
}

TEST(FsConnector, StaleTemporaryFilesOfDeadProcessesAreRemoved) {
  TempDir dir;
  const std::filesystem::path base = dir.path() / "cache";
  std::filesystem::create_directories(base / "sub");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // a pid that is dead now
  const std::string dead = std::to_string(child), mine = std::to_string(::getpid());
  write_file(base / ("a.data.tmp." + dead + "-1"), "torn");
  write_file(base / "sub" / ("b.data.tmp." + dead + "-7"), "torn");
  write_file(base / ("c.data.tmp." + mine + "-1"), "in progress");  // ours: kept
  write_file(base / "d.data.tmp.1-1", "pid 1 is alive");            // kept
  write_file(base / "unrelated.txt", "not ours");                   // kept
  FsConnector c(opts(dir));
  EXPECT_EQ(c.stale_temps_removed(), 2u);
  EXPECT_FALSE(std::filesystem::exists(base / ("a.data.tmp." + dead + "-1")));
  EXPECT_TRUE(std::filesystem::exists(base / ("c.data.tmp." + mine + "-1")));
  EXPECT_TRUE(std::filesystem::exists(base / "d.data.tmp.1-1"));
  EXPECT_TRUE(std::filesystem::exists(base / "unrelated.txt"));
}

TEST(FsConnector, TemporaryFilesAreNeverVisibleAsObjects) {
  TempDir dir;
  FsConnector c(opts(dir));
  write_file(dir.path() / "cache" / ("k.data.tmp." + std::to_string(::getpid()) + "-99"), "x");
  Completion ex = wait_one(c, c.submit_batch_exists({"k"}));
  EXPECT_EQ(ex.result_bytes, (std::vector<std::uint8_t>{0}));
}

TEST(FsConnector, VanishedDirectoryFailsTheSetCleanly) {
  TempDir dir;
  FsConnector c(opts(dir));
  std::filesystem::remove_all(dir.path() / "cache");
  std::string error;
  EXPECT_FALSE(set(c, {"k"}, {Buf(8, 1)}, &error));
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  std::vector<Buf> out = {Buf(8, 0)};
  EXPECT_EQ(get(c, {"k"}, out), (std::vector<std::uint8_t>{0}));
}

TEST(FsConnector, BadBasePathIsAClearError) {
  TempDir dir;
  write_file(dir.path() / "file", "x");
  FsConnectorOptions o;
  o.base_path = dir.path() / "file" / "cache";
  EXPECT_THROW(FsConnector{o}, std::system_error);
  o.base_path = dir.path() / "file";
  EXPECT_THROW(FsConnector{o}, std::system_error);
  o.base_path.clear();
  EXPECT_THROW(FsConnector{o}, std::invalid_argument);
}

// Sizes around the O_DIRECT block: aligned, unaligned head, tail only, 1 MiB plus change.
class FsConnectorODirect : public ::testing::TestWithParam<FsChecksum> {};

TEST_P(FsConnectorODirect, RoundTripsEverySize) {
  TempDir dir;
  FsConnector c(opts(dir, GetParam(), /*odirect=*/true));
  const std::size_t sizes[] = {1, 4096, 4088, 5000, 8192, (1u << 20) + 3};
  for (std::size_t size : sizes) {
    const std::string key = "k" + std::to_string(size);
    ASSERT_TRUE(set(c, {key}, {Buf(size, static_cast<std::uint8_t>(size))})) << size;
    const std::size_t trailer = GetParam() == FsChecksum::kCrc32 ? 8 : 0;
    EXPECT_EQ(std::filesystem::file_size(c.path_for(key)), size + trailer) << size;
    std::vector<Buf> out = {Buf(size, 0)};
    EXPECT_EQ(get(c, {key}, out), (std::vector<std::uint8_t>{1})) << size;
    EXPECT_EQ(out[0], Buf(size, static_cast<std::uint8_t>(size))) << size;
  }
  std::cout << "[ info ] O_DIRECT on " << dir.path()
            << (c.odirect_fell_back() ? ": not supported, buffered fallback" : ": used") << "\n";
}

INSTANTIATE_TEST_SUITE_P(Checksums, FsConnectorODirect,
                         ::testing::Values(FsChecksum::kNone, FsChecksum::kCrc32),
                         [](const auto& info) {
                           return info.param == FsChecksum::kCrc32 ? "crc32" : "none";
                         });

// tmpfs refused O_DIRECT before Linux 6.6 (the fallback path); newer kernels accept it.
TEST(FsConnector, ODirectWorksOrFallsBackOnTmpfs) {
  struct statfs st {};
  if (::statfs("/dev/shm", &st) != 0 || st.f_type != 0x01021994 /* TMPFS_MAGIC */ ||
      ::access("/dev/shm", W_OK) != 0) {
    GTEST_SKIP() << "no writable tmpfs at /dev/shm to try O_DIRECT on";
  }
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", "/dev/shm", 1);
  TempDir dir;
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  FsConnector c(opts(dir, FsChecksum::kCrc32, /*odirect=*/true));
  ASSERT_TRUE(set(c, {"k"}, {Buf(5000, 3)}));
  std::vector<Buf> out = {Buf(5000, 0)};
  EXPECT_EQ(get(c, {"k"}, out), (std::vector<std::uint8_t>{1}));
  EXPECT_EQ(out[0], Buf(5000, 3));
  std::cout << "[ info ] O_DIRECT on tmpfs: "
            << (c.odirect_fell_back() ? "refused, buffered fallback" : "accepted") << "\n";
  EXPECT_EQ(files_under(c.options().base_path), (std::vector<std::string>{"k.data"}))
      << "the refused O_DIRECT open left a file behind";
}

// --- Damage underneath: every kind of storage_testing::fs_damages() -------------------------

struct DamageVariant {
  std::string name;
  FsChecksum checksum;
  bool odirect;
};

struct DamageCase {
  DamageVariant variant;
  storage_testing::FsDamageInfo damage;
};

void PrintTo(const DamageCase& c, std::ostream* os) {
  *os << c.variant.name << " / " << c.damage.name;
}

std::vector<DamageCase> damage_cases() {
  std::vector<DamageCase> cases;
  for (const DamageVariant& v : {DamageVariant{"crc32", FsChecksum::kCrc32, false},
                                 DamageVariant{"crc32_odirect", FsChecksum::kCrc32, true},
                                 DamageVariant{"none", FsChecksum::kNone, false}}) {
    for (const auto& d : storage_testing::fs_damages()) {
      // Without a checksum flipped or swapped bytes load as they are (the documented limit,
      // WithoutChecksumOnlyTheLengthIsChecked).
      if (v.checksum == FsChecksum::kNone && !d.detected_without_checksum) continue;
      cases.push_back({v, d});
    }
  }
  return cases;
}

class FsConnectorDamage : public ::testing::TestWithParam<DamageCase> {};

TEST_P(FsConnectorDamage, LoadIsAMissWithTheReasonIntactKeysLoadAndCloseReturns) {
  const DamageCase& p = GetParam();
  TempDir dir;
  auto c = std::make_unique<FsConnector>(opts(dir, p.variant.checksum, p.variant.odirect));
  // 4096 bytes: without a checksum an empty directory's st_size (4096 on ext4) equals the
  // expected length, as it did when a directory was reported as "holds 4096 bytes".
  constexpr std::size_t kSize = 4096;
  ASSERT_TRUE(
      set(*c, {"victim", "donor", "intact"}, {Buf(kSize, 1), Buf(kSize, 2), Buf(kSize, 3)}));
  const bool fell_back = c->odirect_fell_back();
  const std::string why_not =
      storage_testing::damage_file(c->path_for("victim"), p.damage.kind, c->path_for("donor"));
  if (!why_not.empty()) GTEST_SKIP() << p.damage.name << " cannot be done here: " << why_not;

  // One batch: the damaged key misses, the intact ones load.
  std::vector<Buf> out = {Buf(kSize, 9), Buf(kSize, 0), Buf(kSize, 0)};
  EXPECT_EQ(get(*c, {"victim", "donor", "intact"}, out), (std::vector<std::uint8_t>{0, 1, 1}));
  EXPECT_EQ(out[1], Buf(kSize, 2));
  EXPECT_EQ(out[2], Buf(kSize, 3));
  if (p.damage.refused_before_reading) {
    EXPECT_EQ(out[0], Buf(kSize, 9)) << "the damaged object's destination was written";
  }
  // Its reason says what was found.
  std::vector<Buf> one = {Buf(kSize, 0)};
  std::string error;
  EXPECT_EQ(get(*c, {"victim"}, one, &error), (std::vector<std::uint8_t>{0}));
  EXPECT_NE(error.find(p.damage.reason), std::string::npos) << error;
  EXPECT_NE(error.find(c->path_for("victim").string()), std::string::npos) << error;
  // exists() counts what a load could use: a regular file, not followed.
  const bool regular =
      std::filesystem::is_regular_file(std::filesystem::symlink_status(c->path_for("victim")));
  Completion ex = wait_one(*c, c->submit_batch_exists({"victim", "intact"}));
  EXPECT_EQ(ex.result_bytes, (std::vector<std::uint8_t>{static_cast<std::uint8_t>(regular), 1}));
  // A FIFO or a directory refusing O_DIRECT says nothing of the file system.
  EXPECT_EQ(c->odirect_fell_back(), fell_back);
  // A store over the damage replaces it (rename(2) replaces anything but a directory).
  if (p.damage.kind != storage_testing::FsDamage::kDirectory) {
    ASSERT_TRUE(set(*c, {"victim"}, {Buf(kSize, 4)}));
    EXPECT_EQ(get(*c, {"victim"}, one), (std::vector<std::uint8_t>{1}));
    EXPECT_EQ(one[0], Buf(kSize, 4));
  }
  c->close();  // no worker is stuck on what it found
}

INSTANTIATE_TEST_SUITE_P(Kinds, FsConnectorDamage, ::testing::ValuesIn(damage_cases()),
                         [](const auto& info) {
                           return info.param.variant.name + "_" + info.param.damage.name;
                         });

TEST(FsConnectorConcurrency, ConcurrentWritersNeverExposeATornObject) {
  TempDir dir;
  FsConnector c(opts(dir, FsChecksum::kNone));
  constexpr std::size_t kSize = 256 * 1024;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::uint64_t, Completion> done;
  std::thread drainer([&] {
    while (!stop) {
      wait_readable(c.event_fd(), 5ms);
      for (Completion& d : c.drain_completions()) {
        std::lock_guard lock(mu);
        done.emplace(d.future_id, std::move(d));
      }
    }
  });
  auto wait = [&](std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu);
        if (auto it = done.find(id); it != done.end()) return it->second;
      }
      std::this_thread::sleep_for(1ms);
    }
    return Completion{id, false, {}, "timeout"};
  };
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      // Every writer writes a uniform buffer (all bytes equal), so a torn object shows as a mix.
      std::vector<std::byte> mine(kSize, static_cast<std::byte>(t + 1));
      std::vector<std::byte> seen(kSize);
      for (int i = 0; i < 15; ++i) {
        if (!wait(c.submit_batch_set({"shared"}, {mine.data()}, {kSize}, kSize)).ok) ++bad;
        Completion g = wait(c.submit_batch_get({"shared"}, {seen.data()}, {kSize}, kSize));
        if (g.result_bytes.size() != 1 || g.result_bytes[0] != 1) {
          ++bad;
          continue;
        }
        for (std::size_t j = 1; j < kSize; ++j) {
          if (seen[j] != seen[0]) {
            ++bad;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  drainer.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(files_under(c.options().base_path), (std::vector<std::string>{"shared.data"}));
}

// LMCache's own layout: names written here from the format alone (model with '/' as "-SEP-",
// rank as Python's f"{r:#010x}", group as f"{g:x}", the hash's lower-case hex, the salt raw).
TEST(LmcacheFileNames, FollowLmcachesFormat) {
  EXPECT_EQ(
      lmcache_file_name(ObjectKey(std::string("\x01\xab", 2), "meta-llama/Llama-3.1-8B", 3, 0)),
      "meta-llama-SEP-Llama-3.1-8B@0x00000003@0@01ab.data");
  EXPECT_EQ(lmcache_file_name(ObjectKey("\xff", "m", -3, 255, "tenant-a")),
            "m@-0x0000003@ff@ff@tenant-a.data");
  EXPECT_EQ(lmcache_file_name(ObjectKey("", "m", 0x123456789, 16)), "m@0x123456789@10@.data");
  EXPECT_EQ(lmcache_file_name(ObjectKey("a", std::string(300, 'm'), 0, 0)).size(),
            300u + std::string("@0x00000000@0@61.data").size());
}

// A directory LMCache's fs adapter wrote (raw bytes under its names) loads through the
// connector under FsLayout::kLmcache, and what the connector stores is there under those names,
// a namespace as a subdirectory; a key the layout cannot name fails its batch by name.
TEST(FsConnector, ReadsAndWritesLmcachesLayout) {
  TempDir dir;
  FsConnectorOptions o = opts(dir);
  o.layout = FsLayout::kLmcache;
  FsConnector c(o);
  const ObjectKey written_by_lmcache(std::string("\x0a\x0b", 2), "org/model", 1, 0, "s1");
  const std::string theirs = "org-SEP-model@0x00000001@0@0a0b@s1.data";
  const Buf payload(64, 7);
  write_file(o.base_path / theirs,
             std::string(reinterpret_cast<const char*>(payload.data()), payload.size));
  const bridge::KeyCodec codec;
  std::vector<Buf> out = {Buf(64, 0)};
  EXPECT_EQ(get(c, {codec.encode(written_by_lmcache)}, out), (std::vector<std::uint8_t>{1}));
  EXPECT_EQ(out[0], payload);

  const bridge::KeyCodec tenant("run1");
  const ObjectKey ours(std::string("\xcd", 1), "org/model", 2, 5);
  ASSERT_TRUE(set(c, {codec.encode(ours), tenant.encode(ours)}, {Buf(32, 3), Buf(32, 4)}));
  EXPECT_EQ(files_under(o.base_path),
            (std::vector<std::string>{theirs, "org-SEP-model@0x00000002@5@cd.data",
                                      "run1/org-SEP-model@0x00000002@5@cd.data"}));
  EXPECT_EQ(read_file(o.base_path / "org-SEP-model@0x00000002@5@cd.data"),
            std::string(reinterpret_cast<const char*>(Buf(32, 3).data()), 32));

  // Keys LMCache cannot store at all are stored here all the same, off its flat names.
  const ObjectKey long_name("x", std::string(300, 'm'), 0, 0);
  const ObjectKey nul_model("x", std::string("a\0b", 3), 0, 0);
  ASSERT_TRUE(set(c, {codec.encode(long_name), codec.encode(nul_model)}, {Buf(8, 1), Buf(8, 2)}));
  out = {Buf(8, 0), Buf(8, 0)};
  EXPECT_EQ(get(c, {codec.encode(long_name), codec.encode(nul_model)}, out),
            (std::vector<std::uint8_t>{1, 1}));
  EXPECT_EQ(out[0], Buf(8, 1));
  EXPECT_EQ(out[1], Buf(8, 2));
  EXPECT_EQ(c.path_for(codec.encode(long_name)).parent_path().parent_path(), o.base_path);
  EXPECT_THROW((void)c.path_for("no key string"), std::invalid_argument);
  FsConnectorOptions with_crc = o;
  with_crc.checksum = FsChecksum::kCrc32;
  EXPECT_THROW(FsConnector bad(with_crc), std::invalid_argument);
}

}  // namespace
}  // namespace lmcache::fs
