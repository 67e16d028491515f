// Quantiles of samples (per-GPU, per-job or per-op figures in reports).
#pragma once

#include <algorithm>
#include <vector>

namespace ringside::analysis {

// Quantile q in [0,1] of `sorted` (ascending), interpolated linearly between the
// two nearest values; 0 when empty.
template <typename T>
double quantile_sorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return static_cast<double>(sorted[lo]) +
         (pos - static_cast<double>(lo)) *
             (static_cast<double>(sorted[hi]) - static_cast<double>(sorted[lo]));
}

// The same of unsorted `values` (sorts a copy).
inline double quantile_of(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return quantile_sorted(values, q);
}

}  // namespace ringside::analysis
