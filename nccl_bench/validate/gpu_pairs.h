// The GPU pairs inside one node: which pairs are slow, from readings taken in
// passes (pure logic, the same on every rank, unit-tested without GPUs).
//
// A pass visits every pair of the node once, round by round, so a moment when the
// whole machine is slow falls on the pairs of one pass alike.  A pair is judged
// against the other pairs *of the same pass*: in a pass it is "below" when its
// reading is more than X% (the fleet threshold) below the median of the other
// pairs' readings of that pass.  A slow link is below in nearly every pass; a
// healthy pair, no slower than its peers, is below in fewer than half of them (it
// is the median's own kind), so a pair is slow when it is below in at least
// kSlowShare of the passes (and in at least kMinPasses of them): by chance, a
// healthy pair is that consistently below with a probability of about 1% at 16
// passes even if it were below half of the time.  A pair is also slow when its
// best reading is below the floor for the model.
//
// Attribution: a GPU with at least two slow pairs, more than half of its measured
// pairs, is the GPU (or its NVLink/PCIe port); other slow pairs are the link
// between their two GPUs.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ringside::bench {

struct GpuPairReadings {
  std::vector<std::pair<int, int>> pairs;  // GPU slots, first < second
  // [pass][pair] GB/s; NaN when not measured in that pass.
  std::vector<std::vector<double>> passes;
};

inline constexpr double kSlowShare = 0.8;
inline constexpr int kMinPasses = 4;

struct GpuPairJudgement {
  std::vector<double> best;     // [pair] best reading over the passes, GB/s
  std::vector<double> typical;  // [pair] median over the passes of the other pairs' median
  std::vector<int> below;       // [pair] passes in which it was below the others
  std::vector<int> measured;    // [pair] passes in which it was measured and compared
  std::vector<size_t> slow;     // pairs judged slow, ascending
  bool compared = false;        // at least 3 pairs measured to compare, or a floor
};

// `floor`: the model's floor for the pairs' size (GB/s), if any.
GpuPairJudgement judge_gpu_pairs(const GpuPairReadings& r, std::optional<double> floor,
                                 double threshold_pct);

// The node's verdict lines: one per failing GPU, then one per slow pair not
// explained by a failing GPU.  `what` names the test, e.g. "sendrecv 1M".
std::vector<std::string> gpu_pair_reasons(const GpuPairReadings& r, const GpuPairJudgement& j,
                                          std::optional<double> floor, double threshold_pct,
                                          const std::string& what);

}  // namespace ringside::bench
