// Stragglers: same work, slower device.  A rank is late when its compute gap
// before an op is longer than the other members' gaps for the same op,
// persistently (t statistic, fraction of ops) and by a non-trivial amount.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "detect/context.h"
#include "report/format.h"
#include "load/gpu_summary.h"
#include "report/next_command.h"

namespace ringside::analysis {
std::vector<int64_t> persistently_late_ranks(const Context& ctx) {
  // Judged per communicator: a heavier pipeline stage is only visible in the
  // comms that mix stages, and would be diluted in a rank-wide average.
  const auto& ranks = ctx.stats.ranks();
  std::vector<double> strength(ranks.size(), 0.0);
  for (const auto& c : ctx.set.comms) {
    if (c.present < 2) continue;
    std::vector<std::pair<int64_t, const Lateness*>> members;
    std::vector<double> excess, gaps;
    for (int64_t m : c.members) {
      if (m < 0) continue;
      for (const auto& [ci, l] : ranks[static_cast<size_t>(m)].per_comm) {
        if (ci != c.index || l.groups < static_cast<uint64_t>(ctx.th.min_groups)) continue;
        members.emplace_back(m, &l);
        excess.push_back(l.mean_excess());
        gaps.push_back(l.mean_gap());
      }
    }
    if (members.size() < 2) continue;
    const double typical_gap = median_of(gaps);
    for (const auto& [m, l] : members) {
      const double e = l->mean_excess();
      if (e <= 0 || l->t_stat() < ctx.th.straggler_t) continue;
      if (l->positive_fraction() < ctx.th.straggler_positive) continue;
      if (e < ctx.th.straggler_min_rel * typical_gap) continue;
      // No outlier test against the other members: when a whole stage is
      // late, half the comm is, and the median sits between the two groups.
      strength[static_cast<size_t>(m)] = std::max(strength[static_cast<size_t>(m)], e);
    }
  }
  std::vector<std::pair<double, int64_t>> late;
  for (size_t r = 0; r < strength.size(); ++r) {
    if (strength[r] > 0) late.emplace_back(strength[r], static_cast<int64_t>(r));
  }
  std::sort(late.rbegin(), late.rend());
  std::vector<int64_t> out;
  for (const auto& [e, r] : late) out.push_back(r);
  return out;
}

CauseGuess gpu_cause(const Context& ctx, const std::vector<int64_t>& ranks) {
  std::vector<double> peer_clocks;
  for (const auto& ri : ctx.set.ranks) {
    if (!ri.has_file || ri.gpu.median_sm_clock_mhz <= 0) continue;
    if (std::find(ranks.begin(), ranks.end(), ri.rank) != ranks.end()) continue;
    peer_clocks.push_back(ri.gpu.median_sm_clock_mhz);
  }
  const double peer_clock = median_of(peer_clocks);
  CauseGuess best{"unknown", ""};
  for (int64_t r : ranks) {
    const RankInfo& ri = ctx.set.ranks[static_cast<size_t>(r)];
    for (const auto& e : ri.events) {
      if (static_cast<trace::EventKind>(e.kind) == trace::EventKind::kXid) {
        return {"xid", "GPU counters: XID " + std::to_string(e.value) + " on " +
                           ctx.describe_rank(r) + "."};
      }
    }
    const GpuSummary& g = ri.gpu;
    if (g.slowdown_fraction() >= ctx.th.throttle_fraction) {
      std::string s = "GPU counters: " + slowdown_reason_names(g.slowdown_reasons) + " in " +
                      fmt("%.0f", 100 * g.slowdown_fraction()) + "% of samples";
      if (peer_clock > 0 && g.median_sm_clock_mhz > 0) {
        s += ", SM clock " + fmt("%.0f", g.median_sm_clock_mhz) + " MHz vs " +
             fmt("%.0f", peer_clock) + " MHz on its peers";
      }
      if (g.max_temperature_c > 0) s += ", up to " + std::to_string(g.max_temperature_c) + " C";
      return {"throttling", s + "."};
    }
    if (peer_clock > 0 && g.median_sm_clock_mhz > 0 && g.median_sm_clock_mhz < 0.9 * peer_clock) {
      best = {"low_clocks", "GPU counters: SM clock " + fmt("%.0f", g.median_sm_clock_mhz) +
                                " MHz vs " + fmt("%.0f", peer_clock) +
                                " MHz on its peers, with no throttle reason reported."};
    }
  }
  if (best.cause == "unknown") {
    bool any_samples = false;
    for (int64_t r : ranks)
      any_samples = any_samples || ctx.set.ranks[static_cast<size_t>(r)].gpu.samples > 0;
    best.sentence =
        any_samples ? "GPU counters look normal (no throttling, normal clocks, no XID): look for "
                      "other load on the host or a degraded GPU."
                    : "No GPU counters in the trace to attribute a cause.";
  }
  return best;
}

void detect_stragglers(const Context& ctx, const std::vector<int64_t>& late,
                       std::vector<Finding>& out) {
  if (late.empty()) return;
  const double job = ctx.job_seconds();
  std::vector<int64_t> remaining = late;
  // A whole node late together (noisy neighbour, node-level problem) is one finding.
  for (size_t ni = 0; ni < ctx.set.nodes.size(); ++ni) {
    const auto& node_ranks = ctx.set.node_ranks[ni];
    if (node_ranks.size() < 2) continue;
    bool all = true;
    for (int64_t r : node_ranks)
      all = all && std::find(remaining.begin(), remaining.end(), r) != remaining.end();
    if (!all) continue;
    Finding f;
    f.kind = "straggler";
    f.subkind = "node";
    f.ranks = node_ranks;
    f.nodes = {ctx.set.nodes[ni]};
    Lateness sum;
    for (int64_t r : node_ranks) sum.add(ctx.stats.ranks()[static_cast<size_t>(r)].total);
    f.cost_s = sum.cost_ns / 1e9;
    CauseGuess cause = gpu_cause(ctx, node_ranks);
    f.evidence = "All " + std::to_string(node_ranks.size()) + " ranks of " + ctx.set.nodes[ni] +
                 " take longer between collectives than their peers (" +
                 fmt("%.2f", sum.mean_excess() / 1e6) + " ms per op on average); " + cause.sentence;
    f.extra["cause"] = cause.cause;
    f.severity = std::clamp(f.cost_s / std::max(job, 1e-9) * 2, 0.05, 1.0);
    f.confidence = 0.8;
    f.next_command = next_command_for_node_straggler(ctx, ctx.set.nodes[ni]);
    out.push_back(std::move(f));
    for (int64_t r : node_ranks) remaining.erase(std::find(remaining.begin(), remaining.end(), r));
  }
  for (int64_t r : remaining) {
    const Lateness& l = ctx.stats.ranks()[static_cast<size_t>(r)].total;
    const double cost = l.cost_ns / 1e9;
    if (cost < ctx.th.min_cost_fraction * job) continue;
    Finding f;
    f.kind = "straggler";
    f.subkind = "gpu";
    f.ranks = {r};
    f.nodes = ctx.nodes_of({r});
    f.cost_s = cost;
    const double rel =
        l.mean_gap() > l.mean_excess() ? l.mean_excess() / (l.mean_gap() - l.mean_excess()) : 0;
    CauseGuess cause = gpu_cause(ctx, {r});
    f.evidence = ctx.describe_rank(r) + " computes " + fmt("%.1f", 100 * rel) +
                 "% longer than its peers doing the same work before " +
                 fmt("%.0f", 100 * l.positive_fraction()) + "% of its " + std::to_string(l.groups) +
                 " collectives and arrives last at " +
                 fmt("%.0f", 100.0 * static_cast<double>(l.last) /
                                 static_cast<double>(std::max<uint64_t>(1, l.groups))) +
                 "% of them; the others waited " + fmt("%.2f", cost) + " s for it. " +
                 cause.sentence;
    f.extra["cause"] = cause.cause;
    f.extra["slowdown"] = rel;
    f.extra["last_arrival_fraction"] =
        static_cast<double>(l.last) / static_cast<double>(std::max<uint64_t>(1, l.groups));
    f.extra["gpu_uuid"] = ctx.set.ranks[static_cast<size_t>(r)].gpu_uuid;
    f.severity = std::clamp(cost / std::max(job, 1e-9) * 2, 0.05, 1.0);
    f.confidence = std::clamp(
        0.5 + (l.positive_fraction() - 0.5) + std::min(l.t_stat(), 30.0) / 100, 0.0, 0.99);
    f.next_command = next_command_for_straggler(ctx, r);
    out.push_back(std::move(f));
  }
}

}  // namespace ringside::analysis
