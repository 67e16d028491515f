#include "validate/figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ringside::bench {

double median_of(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string format_gbps(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", v);
  return buf;
}

std::string format_pct(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", v);
  return buf;
}

}  // namespace ringside::bench
