// The device reference's host time: brackets narrow it, a wide one never widens it.
#include <gtest/gtest.h>

#include "clock_anchor.h"

namespace ringside::probe {
namespace {

TEST(ClockAnchor, AWideBracketKeepsTheCarriedEstimate) {
  // The first reference completed within 10 us; 2 s later a thread preempted for
  // 3 ms brackets the next one widely: its estimate stays where the device says.
  const HostInterval first{1'000'000'000, 1'000'010'000};
  const int64_t elapsed = 2'000'000'000;
  const HostInterval wide{2'999'000'000, 3'002'000'000};
  const HostInterval next = carry_forward(first, elapsed, wide);
  EXPECT_LE(next.width(), first.width() + 2 * (elapsed / 10'000 + kFloatSlackNs));
  EXPECT_NEAR(static_cast<double>(next.mid()), static_cast<double>(first.mid() + elapsed), 1e3);
  // The old behaviour, the fresh bracket's midpoint, was 500 us off.
  EXPECT_GT(std::abs(wide.mid() - (first.mid() + elapsed)), 400'000);
}

TEST(ClockAnchor, ANarrowBracketNarrowsAWideStart) {
  // A first reference bracketed widely, then narrowly: the narrow one rules.
  const HostInterval wide{0, 4'000'000};
  const HostInterval narrow{1'002'000'000, 1'002'010'000};
  const HostInterval next = carry_forward(wide, 1'000'000'000, narrow);
  EXPECT_EQ(next.lo, narrow.lo);
  EXPECT_EQ(next.hi, narrow.hi);
}

TEST(ClockAnchor, AClockThatSteppedFollowsTheFreshBracket) {
  // The device says 1 s passed, the host 1.5 s: both cannot hold.
  const HostInterval first{0, 10'000};
  const HostInterval fresh{1'500'000'000, 1'500'020'000};
  const HostInterval next = carry_forward(first, 1'000'000'000, fresh);
  EXPECT_EQ(next.lo, fresh.lo);
  EXPECT_EQ(next.hi, fresh.hi);
}

TEST(ClockAnchor, DriftWithinTheAllowanceIsTracked) {
  // 50 ppm drift over 2 s (100 us): the carried interval still overlaps the
  // fresh bracket, and the estimate moves into it.
  const HostInterval first{0, 10'000};
  const int64_t elapsed = 2'000'000'000;
  const HostInterval fresh{elapsed + 100'000, elapsed + 110'000};
  const HostInterval next = carry_forward(first, elapsed, fresh);
  EXPECT_GE(next.lo, fresh.lo);
  EXPECT_LE(next.hi, fresh.hi);
}

}  // namespace
}  // namespace ringside::probe
