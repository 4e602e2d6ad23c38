#include "lmcache/bridge/circuit_breaker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

namespace lmcache::bridge {
namespace {

using std::chrono::milliseconds;
using Clock = CircuitBreaker::Clock;

CircuitBreakerOptions three_in_a_row() {
  CircuitBreakerOptions o;
  o.threshold = 3;
  o.cooldown = milliseconds(5000);
  o.max_cooldown = milliseconds(300000);
  return o;
}

// Admits one request at `now` and records its outcome.
void fail_once(CircuitBreaker& b, Clock::time_point now) {
  CircuitBreaker::Admission a = b.admit(now);
  ASSERT_TRUE(a.pass);
  b.record(a, /*connection_failure=*/true, now);
}

TEST(CircuitBreaker, OpensAfterThresholdFailuresInARowAndRefusesUntilTheRetryTime) {
  CircuitBreaker b(three_in_a_row());
  const Clock::time_point t0 = Clock::now();
  fail_once(b, t0);
  fail_once(b, t0);
  EXPECT_FALSE(b.state(t0).open);
  EXPECT_EQ(b.state(t0).consecutive_failures, 2u);
  fail_once(b, t0);
  CircuitBreakerState s = b.state(t0);
  EXPECT_TRUE(s.open);
  EXPECT_EQ(s.trips, 1u);
  EXPECT_DOUBLE_EQ(s.retry_in_seconds, 5.0);
  EXPECT_FALSE(b.admit(t0 + milliseconds(4999)).pass);
  EXPECT_EQ(b.state(t0 + milliseconds(4999)).refused, 1u);
  EXPECT_NEAR(b.state(t0 + milliseconds(4000)).retry_in_seconds, 1.0, 1e-9);
}

TEST(CircuitBreaker, TheFirstRequestAfterTheRetryTimeIsTheOnlyProbeAndItsSuccessCloses) {
  CircuitBreaker b(three_in_a_row());
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 3; ++i) fail_once(b, t0);
  const Clock::time_point t1 = t0 + milliseconds(5000);
  CircuitBreaker::Admission probe = b.admit(t1);
  EXPECT_TRUE(probe.pass);
  EXPECT_TRUE(probe.probe);
  EXPECT_TRUE(b.state(t1).probe_out);
  EXPECT_FALSE(b.admit(t1).pass) << "a second request while the probe is out";
  b.record(probe, false, t1);
  CircuitBreakerState s = b.state(t1);
  EXPECT_FALSE(s.open);
  EXPECT_FALSE(s.probe_out);
  EXPECT_EQ(s.consecutive_failures, 0u);
  EXPECT_TRUE(b.admit(t1).pass);
  // Recovery also reset the cooldown: the next trip waits 5 s again.
  for (int i = 0; i < 3; ++i) fail_once(b, t1);
  EXPECT_DOUBLE_EQ(b.state(t1).retry_in_seconds, 5.0);
}

TEST(CircuitBreaker, AFailedProbeDoublesTheCooldownUpToTheMaximum) {
  CircuitBreakerOptions o = three_in_a_row();
  o.max_cooldown = milliseconds(30000);
  CircuitBreaker b(o);
  Clock::time_point t = Clock::now();
  for (int i = 0; i < 3; ++i) fail_once(b, t);
  const std::vector<double> waits = {10, 20, 30, 30};
  for (double expected : waits) {
    t += milliseconds(static_cast<long>(b.state(t).retry_in_seconds * 1000));
    CircuitBreaker::Admission probe = b.admit(t);
    ASSERT_TRUE(probe.probe);
    b.record(probe, true, t);
    EXPECT_DOUBLE_EQ(b.state(t).retry_in_seconds, expected);
    EXPECT_TRUE(b.state(t).open);
  }
  EXPECT_EQ(b.state(t).trips, 5u);
}

TEST(CircuitBreaker, AnAnswerResetsTheCountSoOnlyFailuresInARowOpenIt) {
  CircuitBreaker b(three_in_a_row());
  const Clock::time_point t0 = Clock::now();
  for (int round = 0; round < 4; ++round) {
    fail_once(b, t0);
    fail_once(b, t0);
    CircuitBreaker::Admission a = b.admit(t0);
    b.record(a, false, t0);
    EXPECT_FALSE(b.state(t0).open);
    EXPECT_EQ(b.state(t0).consecutive_failures, 0u);
  }
}

TEST(CircuitBreaker, OutcomesOfRequestsAdmittedBeforeATripOrRecoveryAreIgnored) {
  CircuitBreaker b(three_in_a_row());
  const Clock::time_point t0 = Clock::now();
  CircuitBreaker::Admission early = b.admit(t0);
  CircuitBreaker::Admission early2 = b.admit(t0);
  for (int i = 0; i < 3; ++i) fail_once(b, t0);
  b.record(early, false, t0);  // a slow success from before the trip does not close it
  EXPECT_TRUE(b.state(t0).open);
  const Clock::time_point t1 = t0 + milliseconds(5000);
  CircuitBreaker::Admission probe = b.admit(t1);
  b.record(early, true, t1);  // nor does a stale failure decide the probe
  EXPECT_TRUE(b.state(t1).probe_out);
  b.record(probe, false, t1);
  EXPECT_FALSE(b.state(t1).open);
  b.record(early2, true, t1);  // nor count against the recovered breaker
  EXPECT_EQ(b.state(t1).consecutive_failures, 0u);
  // A probe recorded twice (two connector batches) decides once.
  for (int i = 0; i < 3; ++i) fail_once(b, t1);
  const Clock::time_point t2 = t1 + milliseconds(5000);
  CircuitBreaker::Admission probe2 = b.admit(t2);
  b.record(probe2, false, t2);
  b.record(probe2, true, t2);
  EXPECT_FALSE(b.state(t2).open);
  EXPECT_EQ(b.state(t2).consecutive_failures, 0u);
}

TEST(CircuitBreaker, ThresholdZeroPassesEverythingAndCountsNothing) {
  CircuitBreaker b(CircuitBreakerOptions{});
  EXPECT_FALSE(b.enabled());
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 100; ++i) fail_once(b, t0);
  EXPECT_FALSE(b.state(t0).open);
  EXPECT_EQ(b.state(t0).consecutive_failures, 0u);
}

TEST(CircuitBreaker, RejectsACooldownThatCannotWork) {
  CircuitBreakerOptions o = three_in_a_row();
  o.cooldown = milliseconds(0);
  EXPECT_THROW(CircuitBreaker{o}, std::invalid_argument);
  o.cooldown = milliseconds(10);
  o.max_cooldown = milliseconds(9);
  EXPECT_THROW(CircuitBreaker{o}, std::invalid_argument);
}

TEST(IsConnectionError, NamesWhatSaysTheStoreCannotBeReached) {
  // The texts the reference RESP client and the OS give, and a vendor's own wording.
  for (const char* text :
       {"resp 127.0.0.1:6390: connect: Connection refused", "connection closed by the server",
        "recv: Connection reset by peer", "send: Broken pipe", "no answer within 5000 ms",
        "cannot resolve host: Name or service not known", "Operation TIMED OUT",
        "Network is unreachable", "unexpected EOF", "connector submit threw: connection refused",
        "FaultyConnector: injected connect: connection refused", "Disconnected"}) {
    EXPECT_TRUE(is_connection_error(text)) << text;
  }
  for (const char* text : {"", "protocol error: bad bulk length 'x'", "AUTH failed: -WRONGPASS",
                           "GET: size header mismatch", "disk full", "No such file or directory",
                           "OOM command not allowed when used memory > 'maxmemory'",
                           "connector submit threw: FaultyConnector: injected throw",
                           "RespConnector: batch of 0 keys", "MyConnector failed the batch"}) {
    EXPECT_FALSE(is_connection_error(text)) << text;
  }
}

}  // namespace
}  // namespace lmcache::bridge
