// Which pairs are slow, from readings taken in passes (pure logic, the same on
// every rank, unit-tested without GPUs).  Used for the GPU pairs inside a node,
// for the node pairs (inter-node links), and for single GPUs' device copies (then
// each "pair" is a (node, GPU slot) and the comparison is with the other GPUs).
//
// A pass visits every pair once, round by round, so a moment when the whole
// machine (or fabric) is slow falls on the pairs of one pass alike.  A pair is
// judged against the other pairs *of the same pass*: in a pass it is "below" when
// its reading is more than X% (the fleet threshold) below the median of the other
// pairs' readings of that pass (at least two of them).  A slow link is below in
// nearly every pass; a healthy pair, no slower than its peers, is below in fewer
// than half of them, so a pair is slow when it is below in at least kSlowShare of
// the passes it was compared in, and in at least kMinPasses.  Were a healthy pair
// below half of the time, 13 or more of 16 passes would happen by chance about
// once in 100 runs; it is below less often than that, as the X% margin asks for
// more than being the slower one.  A pair is also slow when its best reading is
// below the floor.
//
// One cause slows several pairs at once (a node's NIC slows all of its pairs: half
// of the 6 pairs of 4 nodes), and among the others of a pass those pull the median
// to their own level.  So the count is made twice: the second leaves out of the
// median the pairs below in at least half of their passes in the first (while at
// least two others remain).
#pragma once

#include <optional>
#include <utility>
#include <vector>

namespace ringside::bench {

inline constexpr double kSlowShare = 0.8;
inline constexpr int kMinPasses = 4;

struct PairPasses {
  // The two ends (GPU slots or nodes), first < second; or (node, GPU slot).
  std::vector<std::pair<int, int>> pairs;
  // [pass][pair] GB/s; NaN when not measured in that pass.
  std::vector<std::vector<double>> passes;
};

struct PassJudgement {
  std::vector<double> best;     // [pair] best reading over the passes, GB/s
  std::vector<double> typical;  // [pair] median over the passes of the other pairs' median
  std::vector<int> below;       // [pair] passes in which it was below the others
  std::vector<int> measured;    // [pair] passes in which it was compared with others
  std::vector<size_t> slow;     // pairs judged slow, ascending
  bool compared = false;        // some pair had others to compare with, or a floor
  bool is_slow(size_t pair) const;
  bool slow_by_peers(size_t pair) const;
  // Below the others in at least half of the passes it was compared in.
  bool below_in_half(size_t pair) const;
  // A pair slow, or below the others in at least half of its passes: worth
  // measuring again before the verdict.
  bool suspect() const;
};

// `floor`: the floor for these pairs at their size (GB/s), if any.
PassJudgement judge_passes(const PairPasses& r, std::optional<double> floor, double threshold_pct);

}  // namespace ringside::bench
