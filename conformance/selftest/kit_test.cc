// The kit's own parts: registry, plugin ABI, buffers, Verify helpers, the RapidCheck driver
// (replayable seeds, reasons kept when a replay passes), depths and generators; and every
// property over the reference implementations and the mutants' conformant bases, instantiated
// exactly as a vendor instantiates the suites.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/freed_memory.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/hostile_resp_peer.h"
#include "lmcache/conformance/internal/sealed_corruption.h"
#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/processor_conformance.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/serde_conformance.h"
#include "lmcache/conformance/verify.h"
#include "lmcache/conformance/wrapper_as_adapter.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "lmcache/serde/lmcr_record.h"
#include "mutants.h"

namespace lmcache::conformance::selftest {
namespace {

// Sets (or unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) saved_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, saved_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string saved_;
};

// Whether malloc is a sanitizer's (gcc says so with __SANITIZE_*__, clang with __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LMCONF_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define LMCONF_SANITIZER_MALLOC 1
#endif
#endif

#ifndef LMCONF_SANITIZER_MALLOC
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}
#endif

TEST(FreedMemory, ABlockFreedIsReusedWithoutFaultingIn) {
#ifdef LMCONF_SANITIZER_MALLOC
  GTEST_SKIP() << "a sanitizer's allocator, which keep_freed_memory() leaves alone";
#else
  keep_freed_memory();
  // Through volatile pointers, so that the compiler keeps every call.
  void* (*volatile allocate)(std::size_t) = std::malloc;
  void (*volatile release)(void*) = std::free;
  constexpr std::size_t kBytes = std::size_t{8} << 20;  // above glibc's default threshold
  void* first = allocate(kBytes);
  ASSERT_NE(first, nullptr);
  std::memset(first, 1, kBytes);
  release(first);
  const long before = minor_faults();
  void* second = allocate(kBytes);
  ASSERT_NE(second, nullptr);
  std::memset(second, 2, kBytes);
  const long faults = minor_faults() - before;
  release(second);
  // Fresh pages would fault once per 4 KiB page (2048 here); kept ones not at all.
  EXPECT_LT(faults, static_cast<long>(kBytes / 4096 / 8))
      << "a freed 8 MiB block was faulted in again";
#endif
}

// A client of the kit's hostile peer (HostilePeerFailsCleanly), on a plain socket.
class PeerClient {
 public:
  explicit PeerClient(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~PeerClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool send(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Up to `n` bytes, fewer when the peer closes, resets or sends nothing for `quiet`.
  std::string read(std::size_t n, std::chrono::milliseconds quiet = std::chrono::seconds(10)) {
    std::string out;
    char buf[4096];
    while (out.size() < n && ready(quiet)) {
      const ssize_t got = ::recv(fd_, buf, std::min(sizeof(buf), n - out.size()), 0);
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
  // Whether the peer has ended the connection (EOF or a reset), waiting up to 10 s.
  bool ended() {
    char c;
    return ready(std::chrono::seconds(10)) && ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  // Whether a recv() would not block: bytes, an EOF or an error (a reset sets POLLERR without
  // POLLIN, which wait_readable() does not count).
  bool ready(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
  }

  int fd_;
  bool connected_ = false;
};

std::string resp_command(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// A RESP bulk reply of `n` bytes of the hostile peer's filler.
std::string bulk_of(std::size_t n) {
  return "$" + std::to_string(n) + "\r\n" + std::string(n, 'v') + "\r\n";
}

TEST(HostileRespPeer, AnswersTheHandshakeThenEachDataCommandWithItsMisbehaviour) {
  using conformance_internal::HostileRespPeer;
  using conformance_internal::Misbehaviour;
  ASSERT_GE(conformance_internal::misbehaviours().size(), 10u);
  for (const Misbehaviour& m : conformance_internal::misbehaviours()) {
    SCOPED_TRACE(m.name);
    HostileRespPeer peer(m);
    PeerClient client(peer.port());
    if (m.then == Misbehaviour::Then::kNotListening) {
      EXPECT_FALSE(client.connected());
      continue;
    }
    ASSERT_TRUE(client.connected());
    if (m.then == Misbehaviour::Then::kHangUpAtAccept) {
      EXPECT_TRUE(client.ended());
      EXPECT_EQ(peer.data_requests(), 0u);
      continue;
    }
    // The handshake, the way clients send it: lower case, one command inline.
    ASSERT_TRUE(client.send(resp_command({"auth", "user", "secret"}) + "PING\r\n" +
                            resp_command({"HELLO", "3"}) + resp_command({"SELECT", "0"})));
    const std::string handshake = "+OK\r\n+PONG\r\n-ERR unknown command 'HELLO'\r\n+OK\r\n";
    EXPECT_EQ(client.read(handshake.size()), handshake);
    EXPECT_EQ(peer.data_requests(), 0u);
    // A SET of a 1 MiB value, sent in pieces that split its header and value: one answer.
    const std::string set = resp_command({"SET", "key", std::string(1 << 20, 'v')});
    for (std::size_t at = 0; at < set.size(); at += 65537) {
      ASSERT_TRUE(client.send(set.substr(at, 65537)));
    }
    // A Value misbehaviour answers with a bulk of another length than the value SET.
    const std::string reply = m.value == Misbehaviour::Value::kShorter  ? bulk_of(1 << 19)
                              : m.value == Misbehaviour::Value::kLonger ? bulk_of((1 << 20) + 1)
                                                                        : m.reply;
    EXPECT_EQ(client.read(reply.size()), reply);
    // The count goes up before the reply is queued; an empty reply is over when the peer resets.
    if (m.then == Misbehaviour::Then::kReset) {
      EXPECT_TRUE(client.ended());
    }
    EXPECT_EQ(peer.data_requests(), 1u);
    switch (m.then) {
      case Misbehaviour::Then::kAgain:
        ASSERT_TRUE(client.send(resp_command({"GET", "key"})));
        EXPECT_EQ(client.read(reply.size()), reply);
        EXPECT_EQ(peer.data_requests(), 2u);
        break;
      case Misbehaviour::Then::kSilence:
        ASSERT_TRUE(client.send(resp_command({"GET", "key"})));
        EXPECT_EQ(client.read(1, std::chrono::milliseconds(50)), "");
        EXPECT_EQ(peer.data_requests(), 1u);
        break;
      case Misbehaviour::Then::kClose:
        EXPECT_TRUE(client.ended());
        break;
      case Misbehaviour::Then::kReset:
      case Misbehaviour::Then::kHangUpAtAccept:
      case Misbehaviour::Then::kNotListening:
        break;
    }
  }
}

TEST(HostileRespPeer, AValueReplyFollowsTheLastValueSetOnAnyConnection) {
  using conformance_internal::Misbehaviour;
  for (Misbehaviour::Value value : {Misbehaviour::Value::kShorter, Misbehaviour::Value::kLonger}) {
    const bool shorter = value == Misbehaviour::Value::kShorter;
    SCOPED_TRACE(shorter ? "shorter" : "longer");
    conformance_internal::HostileRespPeer peer(
        Misbehaviour{"value", "", Misbehaviour::Then::kAgain, value});
    PeerClient first(peer.port());
    PeerClient second(peer.port());
    ASSERT_TRUE(first.connected() && second.connected());
    // Before any SET there is no length to differ from: an error, never a value.
    ASSERT_TRUE(first.send(resp_command({"GET", "k"})));
    const std::string error = first.read(5);
    EXPECT_EQ(error, "-ERR ");
    first.read(200, std::chrono::milliseconds(50));
    // Each SET sizes what answers every later request, on every connection (an adapter's pool).
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096}}) {
      SCOPED_TRACE(n);
      ASSERT_TRUE(first.send(resp_command({"SET", "k", std::string(n, 'x'), "PX", "100"})));
      const std::string want = bulk_of(shorter ? (n == 0 ? 1 : n / 2) : n + 1);
      EXPECT_EQ(first.read(want.size()), want);
      ASSERT_TRUE(second.send(resp_command({"GET", "k"})));
      EXPECT_EQ(second.read(want.size()), want);
    }
  }
}

TEST(HostileRespPeer, InputItCannotParseIsAnsweredOnceThenIgnored) {
  conformance_internal::Misbehaviour m{"error_reply", "-ERR no\r\n",
                                       conformance_internal::Misbehaviour::Then::kAgain};
  conformance_internal::HostileRespPeer peer(m);
  PeerClient client(peer.port());
  ASSERT_TRUE(client.connected());
  // A bulk length no request has, then a line past the peer's bound.
  ASSERT_TRUE(client.send("*1\r\n$-5\r\n" + resp_command({"GET", "k"})));
  EXPECT_EQ(client.read(m.reply.size()), m.reply);
  EXPECT_EQ(client.read(1, std::chrono::milliseconds(50)), "");
  EXPECT_EQ(peer.data_requests(), 1u);
  PeerClient other(peer.port());
  ASSERT_TRUE(other.connected());
  ASSERT_TRUE(other.send(std::string(4096, 'x')));
  EXPECT_EQ(other.read(m.reply.size()), m.reply);
  EXPECT_EQ(peer.data_requests(), 2u);
}

// An LMCR record of `n` pattern bytes as the reference writes it (4 KiB chunks, level 1).
std::vector<std::byte> lmcr_record_of(std::size_t n, LmcrFraming framing) {
  std::vector<std::byte> input(n);
  for (std::size_t i = 0; i < n; ++i) input[i] = static_cast<std::byte>((i * 7 + 3) & 0xffu);
  const LmcrEncodeOptions options{framing, 4096, 1};
  std::vector<std::byte> out(lmcr_max_record_size(n, options));
  out.resize(lmcr_encode(input, out, options));
  return out;
}

TEST(SealedCorruption, EveryEditPassesTheCrcsAndReachesTheChecksBehindThem) {
  const std::vector<std::string> header_fields = {"version",           "codec",       "framing",
                                                  "transform",         "header_size", "record_size",
                                                  "uncompressed_size", "chunk_count", "flags"};
  const std::vector<std::string> descriptor_fields = {"offset", "compressed size",
                                                      "uncompressed size", "CRC-32", "flags"};
  for (LmcrFraming framing : {LmcrFraming::kRaw, LmcrFraming::kGzip}) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{4096}, 3 * std::size_t{4096} + 5}) {
      SCOPED_TRACE(std::to_string(n) + " bytes, framing " +
                   std::to_string(static_cast<int>(framing)));
      const std::vector<std::byte> record = lmcr_record_of(n, framing);
      const auto plan = conformance_internal::sealed_corruption_plan("lmcr", record, 7);
      ASSERT_FALSE(plan.empty());
      std::string all;
      std::size_t payload_edits = 0;
      for (const auto& edit : plan) {
        SCOPED_TRACE(edit.description);
        all += edit.description + "\n";
        MemoryObjPtr copy = make_object(byte_layout(record.size()));
        std::memcpy(copy->data(), record.data(), record.size());
        {
          conformance_internal::ScopedPatches patched(*copy, edit.patches);
          EXPECT_NE(std::memcmp(copy->data(), record.data(), record.size()), 0);
          std::vector<std::byte> out(n);
          const bool payload =
              edit.description.find("payload and header CRCs") != std::string::npos;
          payload_edits += payload;
          try {
            lmcr_decode(std::span<const std::byte>(copy->data(), record.size()), out);
            // Only an edit that leaves a valid record may stand: a stream edit (a gzip member's
            // header has bytes zlib ignores), or the other framing of a record with no chunk.
            const bool framing_of_empty =
                n == 0 && edit.description.rfind("header field framing", 0) == 0;
            EXPECT_TRUE(payload || framing_of_empty) << "an edited header was accepted";
          } catch (const LmcrError& e) {
            // Re-sealed: the CRCs hold, a check behind them refuses.
            const std::string what = e.what();
            EXPECT_EQ(what.find("header CRC mismatch"), std::string::npos) << what;
            EXPECT_EQ(what.find("payload CRC mismatch"), std::string::npos) << what;
          }
        }
        EXPECT_EQ(std::memcmp(copy->data(), record.data(), record.size()), 0);
      }
      for (const std::string& f : header_fields) {
        EXPECT_NE(all.find("header field " + f + " "), std::string::npos) << f;
      }
      if (n > 0) {
        for (const std::string& f : descriptor_fields) {
          EXPECT_NE(all.find("descriptor " + f + " "), std::string::npos) << f;
        }
        EXPECT_GE(payload_edits, 3u);
      }
      // The same seed, the same plan.
      const auto again = conformance_internal::sealed_corruption_plan("lmcr", record, 7);
      ASSERT_EQ(again.size(), plan.size());
      for (std::size_t i = 0; i < plan.size(); ++i) {
        EXPECT_EQ(again[i].description, plan[i].description);
      }
    }
  }
}

TEST(SealedCorruption, ASampledPlanIsEvenlySpreadOverTheWholePlan) {
  const std::vector<std::byte> record = lmcr_record_of(3 * 4096 + 5, LmcrFraming::kGzip);
  const auto whole = conformance_internal::sealed_corruption_plan("lmcr", record, 7);
  ASSERT_GT(whole.size(), 64u);
  EXPECT_TRUE(conformance_internal::sealed_corruption_plan("lmcr", record, 7, 0).empty());
  EXPECT_EQ(conformance_internal::sealed_corruption_plan("lmcr", record, 7, whole.size()).size(),
            whole.size());
  const std::size_t step = (whole.size() + 63) / 64;
  for (std::uint64_t seed : {std::uint64_t{7}, std::uint64_t{8}, std::uint64_t{1000}}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto full = conformance_internal::sealed_corruption_plan("lmcr", record, seed);
    const auto sample = conformance_internal::sealed_corruption_plan("lmcr", record, seed, 64);
    ASSERT_LE(sample.size(), 64u);
    ASSERT_GE(sample.size(), whole.size() / step - 1);
    // Every step-th edit of the full plan, from a start the seed picks, built alike.
    const std::size_t start = seed % step;
    for (std::size_t i = 0; i < sample.size(); ++i) {
      ASSERT_LT(start + i * step, full.size());
      const auto& expected = full[start + i * step];
      EXPECT_EQ(sample[i].description, expected.description);
      ASSERT_EQ(sample[i].patches.size(), expected.patches.size());
      for (std::size_t p = 0; p < expected.patches.size(); ++p) {
        EXPECT_EQ(sample[i].patches[p].offset, expected.patches[p].offset);
        EXPECT_EQ(sample[i].patches[p].bytes, expected.patches[p].bytes);
      }
    }
    // The sample reaches the plan's last part (the streams' payload edits), not its head alone.
    EXPECT_GE(start + (sample.size() - 1) * step + step, full.size());
    EXPECT_TRUE(std::any_of(sample.begin(), sample.end(), [](const auto& edit) {
      return edit.description.find("payload and header CRCs") != std::string::npos;
    }));
  }
}

TEST(SealedCorruption, OnlyLmcrRecordsWithAnIntactHeaderGetAPlan) {
  std::vector<std::byte> record = lmcr_record_of(5000, LmcrFraming::kGzip);
  EXPECT_TRUE(conformance_internal::sealed_corruption_plan("checksum", record, 1).empty());
  EXPECT_TRUE(conformance_internal::sealed_corruption_plan(
                  "lmcr", std::span<const std::byte>(record).first(43), 1)
                  .empty());
  record[41] ^= std::byte{1};  // the flags, not re-sealed: the header CRC no longer holds
  EXPECT_TRUE(conformance_internal::sealed_corruption_plan("lmcr", record, 1).empty());
  conformance_internal::reseal_lmcr_header(record);
  EXPECT_FALSE(conformance_internal::sealed_corruption_plan("lmcr", record, 1).empty());
  try {
    lmcr_parse_header(record);
    ADD_FAILURE() << "non-zero flags were accepted";
  } catch (const LmcrError& e) {
    EXPECT_EQ(std::string(e.what()).find("CRC"), std::string::npos) << e.what();
  }
  EXPECT_THROW(conformance_internal::reseal_lmcr_header(std::span<std::byte>(record).first(20)),
               std::invalid_argument);
}

TEST(SealedCorruption, ScopedPatchesRefuseWhatReachesPastTheObject) {
  MemoryObjPtr obj = make_object(byte_layout(8));
  std::memset(obj->data(), 0, 8);
  const std::vector<conformance_internal::BytePatch> past = {
      {2, {std::byte{1}}}, {6, {std::byte{1}, std::byte{2}, std::byte{3}}}};
  EXPECT_THROW(conformance_internal::ScopedPatches(*obj, past), std::invalid_argument);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(obj->data()[i], std::byte{0}) << "written before refusing";
  {
    // Overlapping patches come back to the original bytes.
    conformance_internal::ScopedPatches p(*obj,
                                          {{1, {std::byte{9}, std::byte{9}}}, {2, {std::byte{7}}}});
    EXPECT_EQ(obj->data()[1], std::byte{9});
    EXPECT_EQ(obj->data()[2], std::byte{7});
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(obj->data()[i], std::byte{0});
}

TEST(Registry, RejectsDuplicateAndInvalidNames) {
  Registry r;
  r.add_serde(copy_serde());
  EXPECT_THROW(r.add_serde(copy_serde()), std::invalid_argument);
  SerdeUnderTest bad = copy_serde();
  bad.name = "has space";
  EXPECT_THROW(r.add_serde(bad), std::invalid_argument);
  bad.name = "no_factory";
  bad.make_serializer = nullptr;
  EXPECT_THROW(r.add_serde(bad), std::invalid_argument);
  r.add_adapter(reference_mock_adapter());
  EXPECT_EQ(r.size(), 2u);
  // A wrapper is also registered as an adapter of its name, which must then be free.
  r.add_wrapper(sequential_wrapper());
  EXPECT_EQ(r.size(), 4u);
  EXPECT_TRUE(r.contains(ImplementationKind::kAdapter, "sequential_wrapper"));
  WrapperUnderTest clash = sequential_wrapper();
  clash.name = "mock";
  EXPECT_THROW(r.add_wrapper(clash), std::invalid_argument);
  EXPECT_EQ(r.size(), 4u);
  EXPECT_TRUE(r.retain_only(ImplementationKind::kAdapter, "mock"));
  EXPECT_EQ(r.size(), 1u);
  EXPECT_FALSE(r.retain_only(ImplementationKind::kSerde, "copy_serde"));
  EXPECT_EQ(r.size(), 0u);
}

void register_one(Registry& r) { r.add_serde(copy_serde()); }
void register_throws(Registry&) { throw std::runtime_error("boom"); }

TEST(PluginAbi, EntryChecksVersionsAndReportsErrors) {
  Registry r;
  char error[256] = {0};
  LmcacheConformanceHostV1 host{LMCACHE_CONFORMANCE_ABI_VERSION,
                                sizeof(LmcacheConformanceHostV1),
                                LMCACHE_CONFORMANCE_PROJECT_VERSION,
                                &r,
                                error,
                                sizeof(error)};
  EXPECT_EQ(conformance_internal::run_plugin_entry(&host, &register_one), LMCACHE_CONFORMANCE_OK);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(conformance_internal::run_plugin_entry(&host, &register_throws),
            LMCACHE_CONFORMANCE_E_REGISTER);
  EXPECT_STREQ(error, "boom");
  host.project_version = "999.0.0";
  EXPECT_EQ(conformance_internal::run_plugin_entry(&host, &register_one),
            LMCACHE_CONFORMANCE_E_VERSION);
  host.project_version = LMCACHE_CONFORMANCE_PROJECT_VERSION;
  host.abi_version = LMCACHE_CONFORMANCE_ABI_VERSION + 1;
  EXPECT_EQ(conformance_internal::run_plugin_entry(&host, &register_one),
            LMCACHE_CONFORMANCE_E_VERSION);
  EXPECT_TRUE(conformance_internal::same_major_minor("1.2.3", "1.2.9"));
  EXPECT_FALSE(conformance_internal::same_major_minor("1.2.3", "1.3.0"));
}

// ---------------------------------------------------------------------------------------------
// Tools the properties are built from.

TEST(Buffers, HalfAndBfloatConversionsRoundToNearestEven) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);  // rounds to inf
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie to even
  EXPECT_EQ(float_to_bf16_bits(std::bit_cast<float>(0x3F818000u)), 0x3F82);
}

// fill_values over every dtype and kind of spec: values stay within the spec, every kind of value
// the header promises shows up (zeros, both signs, subnormals, the top, NaN and inf when allowed),
// and the bytes depend on the seed and the group, not on anything else.
TEST(Buffers, FillValuesSpansTheSpecAndDependsOnlyOnTheSeed) {
  const std::vector<ValueSpec> specs = {ValueSpec{}, ValueSpec{448.0, false, false},
                                        ValueSpec{1.0, true, false}};
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat8E4M3FN,
                      DType::kFloat8E5M2, DType::kUInt8}) {
    for (const ValueSpec& spec : specs) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " max_abs " +
                   (spec.max_abs ? std::to_string(*spec.max_abs) : "none") + " nan " +
                   std::to_string(spec.allow_nan) + " inf " + std::to_string(spec.allow_inf));
      const MemoryLayoutDesc layout({{4096}, {4096}}, {dtype, dtype});
      MemoryObjPtr a = make_object(layout);
      MemoryObjPtr b = make_object(layout);
      MemoryObjPtr c = make_object(layout);
      fill_values(*a, spec, 11);
      fill_values(*b, spec, 11);
      fill_values(*c, spec, 12);
      const auto bytes = [](const MemoryObjPtr& o, std::size_t g) {
        auto s = o->group_bytes(g);
        return std::vector<std::byte>(s.begin(), s.end());
      };
      EXPECT_EQ(bytes(a, 0), bytes(b, 0));
      EXPECT_EQ(bytes(a, 1), bytes(b, 1));
      EXPECT_NE(bytes(a, 0), bytes(c, 0));
      EXPECT_NE(bytes(a, 0), bytes(a, 1));
      if (!is_float_dtype(dtype)) continue;
      const double bound =
          spec.max_abs ? std::min(*spec.max_abs, max_finite(dtype)) : max_finite(dtype);
      std::size_t zeros = 0, negatives = 0, subnormals = 0, nans = 0, infs = 0;
      double largest = 0;
      for (std::size_t i = 0; i < 4096; ++i) {
        const double v = read_element(dtype, a->group_bytes(0).data() + i * element_size(dtype));
        if (std::isnan(v)) {
          ++nans;
          continue;
        }
        if (std::isinf(v)) {
          ++infs;
          continue;
        }
        ASSERT_LE(std::fabs(v), bound) << "element " << i;
        largest = std::max(largest, std::fabs(v));
        zeros += v == 0;
        negatives += std::signbit(v);
        subnormals += v != 0 && std::fabs(v) < min_normal(dtype);
      }
      EXPECT_EQ(nans > 0, spec.allow_nan);
      // e4m3fn has no infinities.
      EXPECT_EQ(infs > 0, spec.allow_inf && dtype != DType::kFloat8E4M3FN);
      EXPECT_GT(zeros, 0u);
      EXPECT_GT(negatives, 0u);
      EXPECT_GT(subnormals, 0u);
      // Every bound above is representable in every float dtype: the extreme itself is drawn.
      EXPECT_EQ(largest, bound);
    }
  }
}

TEST(Buffers, FillBytesIsOneStreamPerSeed) {
  std::vector<std::byte> longer(41), shorter(13), other(41);
  fill_bytes(longer, 5);
  fill_bytes(shorter, 5);
  fill_bytes(other, 6);
  EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), longer.begin()));
  EXPECT_NE(longer, other);
  fill_bytes({}, 5);  // nothing to write, nothing written
}

TEST(Buffers, GuardedObjectSeesWritesOutside) {
  GuardedObject g = GuardedObject::Bytes(16);
  EXPECT_EQ(g.check_guards(), "");
  auto before = g.snapshot();
  g->data()[16] = ~g->data()[16];
  EXPECT_NE(g.check_guards(), "");
  g->data()[3] = ~g->data()[3];
  EXPECT_NE(g.check_payload_unchanged(before, 0, 16), "");
  EXPECT_EQ(g.check_payload_unchanged(before, 4, 16), "");
}

TEST(Verify, HelpersWorkOnTheirOwn) {
  MemoryObjPtr src = make_object(MemoryLayoutDesc::single({3, 5}, DType::kFloat16));
  fill_values(*src, ValueSpec{448.0, true, false}, 7);
  SerdeUnderTest fp8 = reference_fp8_serde(Fp8Format::kE4M3FN);
  EXPECT_TRUE(verify_serde_round_trip(fp8, *src));
  EXPECT_TRUE(verify_short_buffer_rejected(fp8, *src, 1));
  EXPECT_TRUE(verify_bridge_equivalence(fp8, *src));
  // fp8 is lossy: claiming it lossless must fail with a message naming an element.
  SerdeUnderTest claimed = fp8;
  claimed.lossiness = Lossiness::Lossless();
  ::testing::AssertionResult r = verify_serde_round_trip(claimed, *src);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("element"), std::string::npos) << r.message();
}

// The rule without the "(after N passing cases)" count, which a replay resets.
std::string rule_and_case(const std::string& m) {
  std::string out;
  std::istringstream in(m);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("counterexample (after", 0) == 0) line = "counterexample:";
    out += line + "\n";
  }
  return out;
}

// The golden vectors apply to every reference serde: a vector the kit can no longer match to
// its configuration would turn the property into a silent NotSupported.
TEST(GoldenVectors, EveryReferenceSerdeMeetsItsVectors) {
  for (const SerdeUnderTest& s : reference_serdes()) {
    const Verdict v = run_serde_property("MatchesGoldenVectors", s);
    EXPECT_EQ(v.status, Status::kPass) << s.name << ": " << v.message;
  }
}

TEST(GoldenVectors, RawBytesReachSerdesWithoutUint8) {
  // A checksum serde that takes float16 only meets the vectors whose length is even.
  SerdeUnderTest checksum = reference_checksum_serde();
  checksum.input_dtypes = {DType::kFloat16};
  const Verdict v = run_serde_property("MatchesGoldenVectors", checksum);
  EXPECT_EQ(v.status, Status::kPass) << v.message;
  // LMCache's two LMCR fixtures hold 5 bytes: no wider dtype holds them.
  SerdeUnderTest lmcr = reference_lmcr_serde();
  lmcr.input_dtypes = {DType::kFloat32};
  const Verdict none = run_serde_property("MatchesGoldenVectors", lmcr);
  EXPECT_EQ(none.status, Status::kNotSupported) << none.message;
  EXPECT_NE(none.message.find("no input dtype"), std::string::npos) << none.message;
}

TEST(RapidCheck, AFailureCarriesAReplayableSeed) {
  SerdeUnderTest under;
  for (const Mutant& m : all_mutants()) {
    if (m.name == "under_estimate") under = m.serde;
  }
  Verdict first = run_serde_property("EstimateIsUpperBound", under);
  ASSERT_EQ(first.status, Status::kFail);
  ASSERT_TRUE(first.rc_seed.has_value());
  ASSERT_NE(first.rc_params.find("reproduce="), std::string::npos) << first.rc_params;
  Verdict replay;
  {
    ScopedEnv env("RC_PARAMS", first.rc_params.c_str());
    replay = run_serde_property("EstimateIsUpperBound", under);
  }
  EXPECT_EQ(replay.status, Status::kFail);
  // The replay reaches the same rule and the same minimal counterexample.
  EXPECT_NE(first.message.find("is not an upper bound"), std::string::npos) << first.message;
  EXPECT_EQ(rule_and_case(replay.message), rule_and_case(first.message));
}

TEST(RapidCheck, TheReasonIsKeptWhenTheReplayPasses) {
  // Fails the first time it runs, passes ever after: what a timing failure looks like to
  // RapidCheck, whose replay of the minimal case then passes.
  int runs = 0;
  Verdict v = run_rc_property("Selftest.Flaky/none", {.max_success = 5, .shrink = true}, [&] {
    const int n = *rc::gen::inRange(0, 100);
    (void)n;
    require(runs++ > 0, "the broken rule, said once");
  });
  ASSERT_EQ(v.status, Status::kFail);
  EXPECT_NE(v.message.find("the broken rule, said once"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("passed when it was replayed"), std::string::npos) << v.message;
  EXPECT_EQ(v.message.find("no exceptions thrown"), std::string::npos) << v.message;
}

TEST(RapidCheck, ShrinkingStopsWhenItsBudgetIsSpent) {
  // Every case whose two numbers (up to a billion) add up to 1000 or more fails, and each
  // evaluation takes at least 20 ms: shrinking the larger toward 1000 halves its distance
  // per accepted step, dozens of evaluations, more than a 200 ms budget holds. The Fail keeps
  // the first failing case's rule and says that shrinking stopped.
  Verdict v = run_rc_property(
      "Selftest.SlowShrink/none",
      {.max_success = 5, .shrink = true, .shrink_budget = std::chrono::milliseconds(200)}, [] {
        const int a = *rc::gen::inRange(0, 1'000'000'000);
        const int b = *rc::gen::inRange(0, 1'000'000'000);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        require(a < 1000 - b,
                "the slow rule broke for " + std::to_string(a) + " and " + std::to_string(b));
      });
  ASSERT_EQ(v.status, Status::kFail);
  EXPECT_NE(v.message.find("the slow rule broke for "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("shrinking stopped after 200 ms"), std::string::npos) << v.message;
  EXPECT_FALSE(v.rc_params.empty());
}

// ---------------------------------------------------------------------------------------------
// Depths and generators.

TEST(Depth, NamesParseAndTheEnvironmentChooses) {
  for (Depth d : {Depth::kQuick, Depth::kStandard, Depth::kExhaustive}) {
    EXPECT_EQ(parse_depth(depth_name(d)), d);
  }
  EXPECT_FALSE(parse_depth("deep").has_value());
  {
    ScopedEnv env("LMCACHE_CONFORMANCE_DEPTH", nullptr);
    EXPECT_EQ(current_depth(), Depth::kStandard);
  }
  {
    ScopedEnv env("LMCACHE_CONFORMANCE_DEPTH", "exhaustive");
    EXPECT_EQ(current_depth(), Depth::kExhaustive);
  }
  {
    ScopedEnv env("LMCACHE_CONFORMANCE_DEPTH", "deep");
    EXPECT_THROW(current_depth(), std::invalid_argument);
    // A property then fails naming the value instead of running at some other depth.
    Verdict v = run_serde_property("RoundTrip", copy_serde());
    EXPECT_EQ(v.status, Status::kFail);
    EXPECT_NE(v.message.find("deep"), std::string::npos) << v.message;
  }
  const DepthProfile& q = depth_profile(Depth::kQuick);
  const DepthProfile& s = depth_profile(Depth::kStandard);
  const DepthProfile& e = depth_profile(Depth::kExhaustive);
  EXPECT_LT(q.max_group_elements, s.max_group_elements);
  EXPECT_LT(s.max_group_elements, e.max_group_elements);
  EXPECT_GE(s.max_group_elements, std::size_t{1} << 20) << "standard reaches millions of elements";
  EXPECT_GT(s.max_batch, 64u) << "standard batches reach past 64 keys";
  EXPECT_GE(s.resource_tasks, 300u) << "hundreds of tasks for the resource checks";
}

// `n` values of a generator, drawn inside one RapidCheck case.
template <class T>
std::vector<T> sample(const rc::Gen<T>& gen, int n) {
  std::vector<T> out;
  Verdict v = run_rc_property("Selftest.Sample/none",
                              {.max_success = 1, .shrink = false, .scale_with_depth = false}, [&] {
                                out.clear();
                                for (int i = 0; i < n; ++i) out.push_back(*gen);
                              });
  EXPECT_EQ(v.status, Status::kPass) << v.message;
  return out;
}

TEST(Generators, ElementCountsReachTheBoundariesAndTheTop) {
  const std::size_t top = std::size_t{1} << 21;
  std::set<std::size_t> counts;
  for (std::size_t n : sample(gen_element_count(top), 4000)) {
    ASSERT_LE(n, top);
    counts.insert(n);
  }
  for (std::size_t want : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{63},
                           std::size_t{65}, std::size_t{4097}}) {
    EXPECT_TRUE(counts.count(want)) << want << " never drawn";
  }
  EXPECT_GT(*counts.rbegin(), std::size_t{1} << 19) << "nothing near the top was drawn";
  int power_edges = 0;
  for (std::size_t n : counts)
    power_edges += n > 64 && (std::has_single_bit(n) || std::has_single_bit(n + 1) ||
                              std::has_single_bit(n - 1));
  EXPECT_GT(power_edges, 20);
}

TEST(Generators, BatchesCrossTheBitmapBytes) {
  std::set<std::size_t> sizes;
  for (std::size_t n : sample(gen_batch_size(80), 1000)) {
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 80u);
    sizes.insert(n);
  }
  for (std::size_t want : {1u, 8u, 9u, 64u, 65u}) EXPECT_TRUE(sizes.count(want)) << want;
}

TEST(Generators, KeyFamiliesAreDistinctAndDifferInOneField) {
  const auto keys = key_family(42, 200);
  std::set<std::string> seen;
  for (const auto& k : keys) EXPECT_TRUE(seen.insert(k.to_string()).second) << k.to_string();
  int one_field = 0;
  for (std::size_t i = 1; i < keys.size(); ++i) {
    const ObjectKey& a = keys[i];
    const ObjectKey& b = keys[(i - 1) / 2];
    const int differ = (a.chunk_hash() != b.chunk_hash()) + (a.model_name() != b.model_name()) +
                       (a.kv_rank() != b.kv_rank()) + (a.object_group_id() != b.object_group_id()) +
                       (a.cache_salt() != b.cache_salt());
    one_field += differ == 1;
  }
  EXPECT_GT(one_field, 190);
  for (const auto& k : sample(gen_object_key(), 200)) EXPECT_FALSE(k.model_name().empty());
}

}  // namespace
}  // namespace lmcache::conformance::selftest

// ---------------------------------------------------------------------------------------------
// The mutants' conformant bases pass every property: instantiated exactly as a vendor
// instantiates the suites. (The reference implementations run the suites beside their own code:
// reference/lmcache/*/..._conformance_test.cc; lmcache-conform --reference runs them all.)

namespace conf = lmcache::conformance;

INSTANTIATE_TEST_SUITE_P(Bases, SerdeConformance, ::testing::Values(conf::selftest::copy_serde()),
                         conf::ParamName());
INSTANTIATE_TEST_SUITE_P(Bases, ProcessorConformance,
                         ::testing::Values(conf::selftest::queue_processor(),
                                           conf::selftest::queue_processor_over_checksum()),
                         conf::ParamName());
INSTANTIATE_TEST_SUITE_P(
    Bases, AdapterConformance,
    ::testing::Values(conf::selftest::decorated_mock_adapter(),
                      conf::selftest::bridge_over_memory_adapter(),
                      conf::adapter_of_wrapper(conf::selftest::decorated_wrapper()),
                      conf::adapter_of_wrapper(conf::selftest::sequential_wrapper())),
    conf::ParamName());
INSTANTIATE_TEST_SUITE_P(Bases, WrapperConformance,
                         ::testing::Values(conf::selftest::decorated_wrapper(),
                                           conf::selftest::sequential_wrapper()),
                         conf::ParamName());
