// The host time of a device reference event, as an interval: every bracket of
// host readings around a reference's completion constrains it, and the device's
// own elapsed time carries the interval from one reference to the next.  Kept as
// the intersection, one wide bracket (a thread preempted between its readings)
// never makes the estimate worse.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ringside::probe {

// How far the device clock may drift from the host's per unit of elapsed time
// (GPU and host oscillators: tens of ppm).
constexpr double kDriftAllowance = 100e-6;
constexpr int64_t kFloatSlackNs = 2'000;  // cuEventElapsedTime is a float in ms

struct HostInterval {
  int64_t lo = 0, hi = 0;
  int64_t mid() const { return lo + (hi - lo) / 2; }
  int64_t width() const { return hi - lo; }
};

// The next reference's interval: `fresh` (its own bracket) intersected with
// `previous` moved by `elapsed_ns`, widened by the drift that elapsed time
// allows.  If the two cannot both hold (a clock stepped), the fresh bracket wins.
inline HostInterval carry_forward(const HostInterval& previous, int64_t elapsed_ns,
                                  const HostInterval& fresh) {
  const auto slack =
      static_cast<int64_t>(static_cast<double>(std::abs(elapsed_ns)) * kDriftAllowance) +
      kFloatSlackNs;
  const HostInterval carried{previous.lo + elapsed_ns - slack, previous.hi + elapsed_ns + slack};
  const HostInterval both{std::max(fresh.lo, carried.lo), std::min(fresh.hi, carried.hi)};
  return both.lo <= both.hi ? both : fresh;
}

}  // namespace ringside::probe
