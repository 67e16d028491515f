#include "whatif/what_if.h"

#include <algorithm>
#include <map>

namespace ringside::analysis {
namespace {

// The most a slowdown can have cost the job: the time a typical rank spent inside
// communication calls (the union of its ops' intervals: ops overlapping each other on
// several streams count once).  A culprit makes the others wait inside those calls
// and a slow link lengthens them; removing either cannot give back more.
double exposed_comm_seconds(const Context& ctx) {
  std::vector<double> exposed;
  for (const auto& rl : ctx.stats.ranks()) {
    if (rl.inside_ns > 0) exposed.push_back(rl.inside_ns);
  }
  return median_of(exposed) / 1e9;
}

}  // namespace

WhatIf compute_what_if(const Context& ctx, const std::vector<Finding>& findings) {
  WhatIf w;
  w.actual_s = std::max(0.0, ctx.job_seconds());
  const double cap = std::min(w.actual_s, exposed_comm_seconds(ctx));
  double saved_total = 0;
  std::map<int64_t, double> per_rank;
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const bool slowdown = f.kind == "straggler" || f.kind == "imbalance" || f.kind == "slow_link";
    if (!slowdown || f.cost_s <= 0) continue;
    const double saved = std::min(f.cost_s, cap - saved_total);
    if (saved <= 0) break;
    saved_total += saved;
    std::string cause = f.kind;
    if (!f.subkind.empty()) cause += " (" + f.subkind + ")";
    if (f.ranks.size() == 1)
      cause += " rank " + std::to_string(f.ranks.front());
    else if (!f.nodes.empty()) {
      cause += " ";
      for (size_t k = 0; k < f.nodes.size(); ++k) cause += (k ? "-" : "") + f.nodes[k];
    }
    w.per_cause.push_back({i, cause, saved, w.actual_s > 0 ? saved / w.actual_s : 0});
    // Per rank: a rank's own measured cost where it is a culprit; links split evenly.
    double own_sum = 0;
    for (int64_t r : f.ranks) own_sum += ctx.stats.ranks()[static_cast<size_t>(r)].total.cost_ns;
    for (int64_t r : f.ranks) {
      const double own = ctx.stats.ranks()[static_cast<size_t>(r)].total.cost_ns;
      per_rank[r] += f.kind != "slow_link" && own_sum > 0
                         ? saved * own / own_sum
                         : saved / static_cast<double>(f.ranks.size());
    }
  }
  w.ideal_s = w.actual_s - saved_total;
  for (const auto& [r, s] : per_rank) w.per_rank.push_back({r, s});
  std::sort(w.per_rank.begin(), w.per_rank.end(),
            [](const RankSaving& a, const RankSaving& b) { return a.saved_s > b.saved_s; });
  if (w.per_rank.size() > 32) w.per_rank.resize(32);
  return w;
}

}  // namespace ringside::analysis
