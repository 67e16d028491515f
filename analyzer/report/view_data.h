// The bounded data the HTML report draws besides the findings: the report's
// `views` field (docs/report-format.md).  Its size grows with ranks and
// communicators, never with the number of ops: per rank a few dozen numbers.
#pragma once

#include <nlohmann/json.hpp>

#include "detect/context.h"
#include "report/report.h"

namespace ringside::analysis {

// Quantiles listed for every distribution in `views`.
inline constexpr double kViewQuantiles[] = {0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1};
// Bandwidth distributions listed (the most observed (comm, op, size) first).
inline constexpr size_t kMaxBusBwViews = 64;
// GPU counter points over all GPUs: above 1024 ranks each GPU gets fewer than
// kGpuSeriesPoints (at least kMinGpuSeriesPoints), so the page stays small.
inline constexpr size_t kGpuSeriesBudget = 1024 * kGpuSeriesPoints;
inline constexpr size_t kMinGpuSeriesPoints = 4;

// `views`: per-GPU identity, counters and sparkline series (`gpus`), per-rank
// arrival lateness quantiles (`lateness`), bus bandwidth quantiles per
// communicator, op and size (`busbw`), and the ops around each finding
// (`timelines`, report/finding_timeline.h).
nlohmann::json view_data(const Context& ctx, const std::vector<Finding>& findings, size_t batch);

}  // namespace ringside::analysis
