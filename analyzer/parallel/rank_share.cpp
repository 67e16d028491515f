#include "parallel/rank_share.h"

#include <algorithm>

namespace ringside::analysis {

std::vector<int64_t> rank_share(const TraceSet& set, int part, int parts) {
  // A file costs its records plus a fixed price for opening it (counted as 64 records).
  constexpr uint64_t kOpenCost = 64;
  uint64_t total = 0;
  for (const RankInfo& ri : set.ranks) total += ri.has_file ? ri.op_count + kOpenCost : 0;
  std::vector<int64_t> share;
  uint64_t before = 0;  // cost of the files ahead of this one
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file) continue;
    const uint64_t cost = ri.op_count + kOpenCost;
    // The process whose slice of [0, total) holds the file's middle reads it.
    const double middle = static_cast<double>(before + cost / 2) / static_cast<double>(total);
    const int owner = std::min(parts - 1, static_cast<int>(middle * parts));
    if (owner == part) share.push_back(ri.rank);
    before += cost;
  }
  return share;
}

}  // namespace ringside::analysis
