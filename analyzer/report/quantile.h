// Quantiles of small samples (per-GPU or per-job figures in reports).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace ringside::analysis {

// Quantile q in [0,1] of `values` by nearest rank (on a sorted copy); 0 when empty.
inline double quantile_of(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double at = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size()));
  const size_t i = at < 1 ? 0 : static_cast<size_t>(at) - 1;
  return values[std::min(i, values.size() - 1)];
}

}  // namespace ringside::analysis
