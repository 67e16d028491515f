#include "validate/pair_passes.h"

#include <algorithm>
#include <cmath>

#include "validate/figures.h"

namespace ringside::bench {

bool PassJudgement::is_slow(size_t pair) const {
  return std::find(slow.begin(), slow.end(), pair) != slow.end();
}

bool PassJudgement::slow_by_peers(size_t pair) const {
  return measured[pair] >= kMinPasses && below[pair] >= kSlowShare * measured[pair];
}

bool PassJudgement::below_in_half(size_t pair) const {
  return measured[pair] > 0 && 2 * below[pair] >= measured[pair];
}

bool PassJudgement::suspect() const {
  if (!slow.empty()) return true;
  for (size_t p = 0; p < below.size(); ++p) {
    if (below_in_half(p)) return true;
  }
  return false;
}

namespace {

// One count over the passes: each pair against the median of the other pairs of
// its pass, leaving out the pairs in `doubtful` (but itself) while at least two
// others remain.
PassJudgement count_passes(const PairPasses& r, const std::vector<bool>& doubtful,
                           double threshold_pct) {
  const size_t np = r.pairs.size();
  PassJudgement j;
  j.best.assign(np, NAN);
  j.typical.assign(np, NAN);
  j.below.assign(np, 0);
  j.measured.assign(np, 0);
  std::vector<std::vector<double>> refs(np);
  std::vector<double> others, trusted;
  for (const std::vector<double>& pass : r.passes) {
    for (size_t p = 0; p < np && p < pass.size(); ++p) {
      const double x = pass[p];
      if (std::isnan(x)) continue;
      j.best[p] = std::isnan(j.best[p]) ? x : std::max(j.best[p], x);
      others.clear();
      trusted.clear();
      for (size_t q = 0; q < np && q < pass.size(); ++q) {
        if (q == p || std::isnan(pass[q])) continue;
        others.push_back(pass[q]);
        if (!doubtful[q]) trusted.push_back(pass[q]);
      }
      if (others.size() < 2) continue;  // one other pair is no majority to compare with
      const double ref = median_of(trusted.size() >= 2 ? trusted : others);
      refs[p].push_back(ref);
      ++j.measured[p];
      if (x < (1.0 - threshold_pct / 100.0) * ref) ++j.below[p];
    }
  }
  for (size_t p = 0; p < np; ++p) j.typical[p] = median_of(refs[p]);
  return j;
}

}  // namespace

PassJudgement judge_passes(const PairPasses& r, std::optional<double> floor, double threshold_pct) {
  const size_t np = r.pairs.size();
  // Two counts (pair_passes.h): the second leaves out of the others' median the pairs
  // below in at least half of their passes in the first.
  PassJudgement j = count_passes(r, std::vector<bool>(np, false), threshold_pct);
  std::vector<bool> doubtful(np, false);
  bool any = false;
  for (size_t p = 0; p < np; ++p) {
    doubtful[p] = j.below_in_half(p);
    any = any || doubtful[p];
  }
  if (any) j = count_passes(r, doubtful, threshold_pct);
  for (size_t p = 0; p < np; ++p) {
    const bool by_floor = floor && !std::isnan(j.best[p]) && j.best[p] < *floor;
    if (j.measured[p] > 0 || (floor && !std::isnan(j.best[p]))) j.compared = true;
    if (j.slow_by_peers(p) || by_floor) j.slow.push_back(p);
  }
  return j;
}

}  // namespace ringside::bench
