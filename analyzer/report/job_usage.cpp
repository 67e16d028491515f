#include "report/job_usage.h"

#include <set>
#include <string>
#include <vector>

#include "report/quantile.h"

namespace ringside::analysis {
namespace {

// {mean, p5, p50, p95} of per-GPU means, null without samples.
nlohmann::json spread_of(const std::vector<double>& per_gpu) {
  if (per_gpu.empty()) return nullptr;
  double sum = 0;
  for (double v : per_gpu) sum += v;
  return {{"mean", sum / static_cast<double>(per_gpu.size())},
          {"p5", quantile_of(per_gpu, 0.05)},
          {"p50", quantile_of(per_gpu, 0.5)},
          {"p95", quantile_of(per_gpu, 0.95)}};
}

// The probe's own threads' CPU time as a share of one core over each rank's traced
// time: {mean, max, max_rank, ranks}; null when no trace records it.
nlohmann::json probe_cpu_of(const TraceSet& set) {
  double sum = 0, max = -1;
  int64_t max_rank = -1, ranks = 0;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file || ri.probe_cpu_ns <= 0 || ri.last_flush_local <= 0) continue;
    const double pct =
        100.0 * static_cast<double>(ri.probe_cpu_ns) / static_cast<double>(ri.last_flush_local);
    sum += pct;
    ++ranks;
    if (pct > max) {
      max = pct;
      max_rank = ri.rank;
    }
  }
  if (ranks == 0) return nullptr;
  return {{"mean", sum / static_cast<double>(ranks)},
          {"max", max},
          {"max_rank", max_rank},
          {"ranks", ranks}};
}

}  // namespace

nlohmann::json job_usage(const TraceSet& set, const Context& ctx) {
  int64_t gpus = 0;
  std::set<std::string> nodes;
  std::vector<double> util_gpu, util_mem;
  uint64_t mem_max = 0;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file) continue;
    ++gpus;
    nodes.insert(ri.node);
    if (ri.gpu.util_samples > 0) {
      util_gpu.push_back(ri.gpu.mean_util_gpu_pct());
      util_mem.push_back(ri.gpu.mean_util_mem_pct());
    }
    mem_max = std::max(mem_max, ri.gpu.mem_used_max_bytes);
  }
  const double seconds = ctx.job_seconds();
  return {{"gpus", gpus},
          {"nodes", nodes.size()},
          {"start_unix_s", (static_cast<double>(set.base_realtime_ns) + ctx.job_start_ns) / 1e9},
          {"seconds", seconds},
          {"gpu_hours", static_cast<double>(gpus) * seconds / 3600},
          {"gpus_sampled", util_gpu.size()},
          {"gpu_util_pct", spread_of(util_gpu)},
          {"mem_util_pct", spread_of(util_mem)},
          {"mem_used_max_bytes", mem_max},
          {"probe_cpu_pct", probe_cpu_of(set)}};
}

}  // namespace ringside::analysis
