#include "validate/gpu_pairs.h"

#include <algorithm>
#include <cmath>

#include "validate/figures.h"

namespace ringside::bench {

GpuPairJudgement judge_gpu_pairs(const GpuPairReadings& r, std::optional<double> floor,
                                 double threshold_pct) {
  const size_t np = r.pairs.size();
  GpuPairJudgement j;
  j.best.assign(np, NAN);
  j.typical.assign(np, NAN);
  j.below.assign(np, 0);
  j.measured.assign(np, 0);
  std::vector<std::vector<double>> refs(np);
  for (const std::vector<double>& pass : r.passes) {
    for (size_t p = 0; p < np && p < pass.size(); ++p) {
      const double x = pass[p];
      if (std::isnan(x)) continue;
      j.best[p] = std::isnan(j.best[p]) ? x : std::max(j.best[p], x);
      std::vector<double> others;
      for (size_t q = 0; q < np && q < pass.size(); ++q) {
        if (q != p && !std::isnan(pass[q])) others.push_back(pass[q]);
      }
      if (others.size() < 2) continue;  // one other pair is no majority to compare with
      const double ref = median_of(others);
      refs[p].push_back(ref);
      ++j.measured[p];
      if (x < (1.0 - threshold_pct / 100.0) * ref) ++j.below[p];
    }
  }
  for (size_t p = 0; p < np; ++p) {
    j.typical[p] = median_of(refs[p]);
    const bool by_peers = j.measured[p] >= kMinPasses && j.below[p] >= kSlowShare * j.measured[p];
    const bool by_floor = floor && !std::isnan(j.best[p]) && j.best[p] < *floor;
    if (j.measured[p] > 0 || (floor && !std::isnan(j.best[p]))) j.compared = true;
    if (by_peers || by_floor) j.slow.push_back(p);
  }
  return j;
}

std::vector<std::string> gpu_pair_reasons(const GpuPairReadings& r, const GpuPairJudgement& j,
                                          std::optional<double> floor, double threshold_pct,
                                          const std::string& what) {
  std::vector<std::string> out;
  int ngpus = 0;
  for (const auto& [a, b] : r.pairs) ngpus = std::max({ngpus, a + 1, b + 1});
  auto is_slow = [&](size_t p) {
    return std::find(j.slow.begin(), j.slow.end(), p) != j.slow.end();
  };
  std::vector<bool> gpu_bad(static_cast<size_t>(ngpus), false);
  for (int g = 0; g < ngpus; ++g) {
    int total = 0, bad = 0;
    std::vector<double> own;
    for (size_t p = 0; p < r.pairs.size(); ++p) {
      if (r.pairs[p].first != g && r.pairs[p].second != g) continue;
      if (std::isnan(j.best[p])) continue;
      ++total;
      own.push_back(j.best[p]);
      if (is_slow(p)) ++bad;
    }
    if (bad >= 2 && 2 * bad > total) {
      gpu_bad[static_cast<size_t>(g)] = true;
      out.push_back("GPU " + std::to_string(g) + ": " + what + " with " + std::to_string(bad) +
                    " of " + std::to_string(total) + " other GPUs of the node slow (its best " +
                    format_gbps(median_of(own)) + " median): this GPU or its NVLink/PCIe port");
    }
  }
  for (size_t p : j.slow) {
    const auto [a, b] = r.pairs[p];
    if (gpu_bad[static_cast<size_t>(a)] || gpu_bad[static_cast<size_t>(b)]) continue;
    std::string why = "GPU " + std::to_string(a) + "<->GPU " + std::to_string(b) + " " + what +
                      ": best " + format_gbps(j.best[p]);
    if (floor && j.best[p] < *floor) why += ", below the floor " + format_gbps(*floor);
    if (j.measured[p] >= kMinPasses && j.below[p] >= kSlowShare * j.measured[p]) {
      why += ", more than " + format_pct(threshold_pct) + " below the node's other GPU pairs (" +
             format_gbps(j.typical[p]) + ") in " + std::to_string(j.below[p]) + " of " +
             std::to_string(j.measured[p]) + " passes";
    }
    out.push_back(why + ": the link between these two GPUs");
  }
  return out;
}

}  // namespace ringside::bench
