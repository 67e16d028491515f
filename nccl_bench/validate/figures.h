// Small helpers the validate verdicts share: the median of readings that may
// hold NaN (not measured), and how figures are written in reasons.
#pragma once

#include <string>
#include <vector>

namespace ringside::bench {

// The median of the non-NaN values; NaN when there are none.
double median_of(std::vector<double> v);
std::string format_gbps(double v);  // 1.234 -> "1.23 GB/s"
std::string format_pct(double v);   // 74.6 -> "75%"

}  // namespace ringside::bench
