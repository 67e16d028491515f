// The plugin's step clock runs at the rate of CLOCK_MONOTONIC, whether it reads
// the time-stamp counter or the clock itself.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "ringside/trace_meta.h"
#include "step_clock.h"

namespace ringside::probe {
namespace {

using trace::monotonic_now_ns;

// A step clock reading bracketed by two monotonic readings.
struct Bracket {
  int64_t before, step, after;
};

Bracket read_bracket() {
  Bracket b{};
  b.before = monotonic_now_ns();
  b.step = step_clock_ns();
  b.after = monotonic_now_ns();
  return b;
}

TEST(StepClock, DifferencesFollowTheMonotonicClock) {
  init_step_clock();
  for (int round = 0; round < 3; ++round) {
    const Bracket a = read_bracket();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const Bracket b = read_bracket();
    const int64_t step = b.step - a.step;
    // The true interval lies between these two, however the thread was preempted.
    const double shortest = static_cast<double>(b.before - a.after);
    const double longest = static_cast<double>(b.after - a.before);
    EXPECT_GE(static_cast<double>(step), shortest * 0.99)
        << "tsc: " << step_clock_uses_tsc() << ", round " << round;
    EXPECT_LE(static_cast<double>(step), longest * 1.01)
        << "tsc: " << step_clock_uses_tsc() << ", round " << round;
  }
}

TEST(StepClock, NeverGoesBackOnOneThread) {
  init_step_clock();
  int64_t last = step_clock_ns();
  for (int i = 0; i < 100000; ++i) {
    const int64_t now = step_clock_ns();
    ASSERT_GE(now, last) << "reading " << i;
    last = now;
  }
}

}  // namespace
}  // namespace ringside::probe
