#include "detect/context.h"

#include <algorithm>
#include <cstdio>

namespace ringside::analysis {

int64_t Context::last_seen_ns(int64_t rank) const {
  const RankInfo& ri = set.ranks[static_cast<size_t>(rank)];
  int64_t t = groups.progress()[static_cast<size_t>(rank)].last_activity;
  if (ri.last_flush_local != trace::kUnknownTime) t = std::max(t, ri.to_job(ri.last_flush_local));
  return t;
}

std::string Context::describe_rank(int64_t rank) const {
  const RankInfo& ri = set.ranks[static_cast<size_t>(rank)];
  if (!ri.has_file) return "rank " + std::to_string(rank) + " (no trace)";
  std::string s = "rank " + std::to_string(rank) + " (" + ri.node;
  if (ri.gpu_device >= 0) s += ", GPU " + std::to_string(ri.gpu_device);
  return s + ")";
}

std::vector<std::string> Context::nodes_of(const std::vector<int64_t>& ranks) const {
  std::vector<std::string> out;
  for (int64_t r : ranks) {
    if (r < 0 || r >= static_cast<int64_t>(set.ranks.size())) continue;
    const RankInfo& ri = set.ranks[static_cast<size_t>(r)];
    if (!ri.has_file) continue;
    if (std::find(out.begin(), out.end(), ri.node) == out.end()) out.push_back(ri.node);
  }
  return out;
}

std::optional<double> Context::mean_host_wait_s() const {
  double sum = 0;
  int ranks = 0;
  std::vector<std::pair<int64_t, int64_t>> points;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file || ri.run_delay.empty()) continue;
    // When the span ends before the first flush (a job shorter than the flush interval,
    // or one that hung right after it started), its wait counts from the process's clock
    // reference (trace-local 0), where its threads start with none.  Else from the last
    // flush at or before the span's start, or the first (setup before it is not the job's).
    points.clear();
    const int64_t first_flush = ri.run_delay.front().first;
    if (first_flush > 0 && static_cast<double>(ri.to_job(first_flush)) >= job_end_ns)
      points.emplace_back(0, 0);
    points.insert(points.end(), ri.run_delay.begin(), ri.run_delay.end());
    if (points.size() < 2) continue;
    // From the last flush at or before the span's start to the first at or after its
    // end (flushes come every second or so).
    int64_t from = points.front().second, to = points.back().second;
    bool ended = false;
    for (const auto& [t, delay] : points) {
      const double at = static_cast<double>(ri.to_job(t));
      if (at <= job_start_ns) from = delay;
      if (!ended && at >= job_end_ns) {
        to = delay;
        ended = true;
      }
    }
    sum += static_cast<double>(std::max<int64_t>(0, to - from)) / 1e9;
    ++ranks;
  }
  if (ranks == 0) return std::nullopt;
  return sum / ranks;
}

double confidence_from_cost(const Context& ctx, double cost_s) {
  const double share = cost_s / std::max(ctx.job_seconds(), 1e-9);
  return std::clamp(share / (4 * ctx.th.imbalance_min_cost_fraction), 0.3, 0.9);
}

}  // namespace ringside::analysis
