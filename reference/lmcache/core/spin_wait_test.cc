#include "lmcache/core/spin_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/thread_state.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;

// "Short" is within 2 x max_spin; a max_spin of 500 ms makes the waits that find their event
// at once short on any machine (a stall of a second inside one would be needed to make one
// long), and the long wait is made long by construction, not by guessing a wake-up time.
TEST(AdaptiveSpinWaiterConcurrency, SpinsWhileWaitsAreShortAndStopsAfterALongOne) {
  EventNotifier n;
  AdaptiveSpinWaiter w(500ms);
  n.notify();
  EXPECT_TRUE(w.wait_readable(n.fd(), 1000ms)) << "already readable";
  EXPECT_EQ(w.waits_spun(), 1u) << "the first wait spins";
  n.consume();

  // A long wait (past 2 x 500 ms): the whole spin is spent, then it sleeps. The event comes once
  // this thread sleeps in poll() (its 500 ms spun) and 1 s more has passed.
  const auto spun_before = w.spun();
  const pid_t waiter = core_internal::current_tid();
  std::thread late([&] {
    core_internal::wait_until_asleep_in_poll(waiter);
    std::this_thread::sleep_for(1s);
    n.notify();
  });
  EXPECT_TRUE(w.wait_readable(n.fd(), 600000ms));
  late.join();
  EXPECT_EQ(w.waits_spun(), 2u);
  EXPECT_GE(w.spun() - spun_before, std::chrono::nanoseconds(500ms));
  n.consume();

  // After that long wait the next one does not spin, even though its event is there at once
  // (it costs no CPU re-checking), and that short wait turns spinning back on.
  n.notify();
  const auto spun_after_long = w.spun();
  EXPECT_TRUE(w.wait_readable(n.fd(), 1000ms));
  EXPECT_EQ(w.waits_spun(), 2u) << "no spin right after a long wait";
  EXPECT_EQ(w.spun(), spun_after_long);
  n.consume();
  n.notify();
  EXPECT_TRUE(w.wait_readable(n.fd(), 1000ms));
  EXPECT_EQ(w.waits_spun(), 3u) << "a short wait turns spinning back on";
  EXPECT_EQ(w.waits(), 4u);
}

// Where every wait is long (here: nothing ever comes, 3 ms timeouts against a 100 µs budget),
// the waiter still probes: one wait in kProbeEvery spins.
TEST(AdaptiveSpinWaiterConcurrency, LongWaitsStillProbeEveryFewWaits) {
  EventNotifier n;
  AdaptiveSpinWaiter w(100us);
  const std::uint64_t waits = 3 * AdaptiveSpinWaiter::kProbeEvery;
  for (std::uint64_t i = 0; i < waits; ++i) EXPECT_FALSE(w.wait_readable(n.fd(), 3ms));
  EXPECT_EQ(w.waits(), waits);
  // The first wait spins (nothing before it), then one in every kProbeEvery.
  EXPECT_EQ(w.waits_spun(), 3u);
}

TEST(AdaptiveSpinWaiterConcurrency, ZeroSpinNeverSpinsAndTimeoutsAreReported) {
  EventNotifier n;
  AdaptiveSpinWaiter w(0us);
  EXPECT_FALSE(w.wait_readable(n.fd(), 5ms));
  EXPECT_EQ(w.waits_spun(), 0u);
  EXPECT_EQ(w.spun().count(), 0);
  AdaptiveSpinWaiter negative(-5us);
  EXPECT_EQ(negative.max_spin().count(), 0);
  AdaptiveSpinWaiter spinning(50us);
  EXPECT_FALSE(spinning.wait_readable(n.fd(), 2ms)) << "nothing came: false after the timeout";
  EXPECT_FALSE(spinning.wait_readable(-1, 1ms));
}

}  // namespace
}  // namespace lmcache
