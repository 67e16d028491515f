// Stragglers: same work, slower device.  The late ranks (detect/late_sets.cpp) that
// no structure explains are stragglers: a whole node late together is one, else each
// rank on its own.  With no late rank, one that holds the job up now and then.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "detect/context.h"
#include "load/gpu_summary.h"
#include "report/format.h"
#include "report/next_command.h"

namespace ringside::analysis {

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

namespace {

// A straggler finding that names rank `r`: what each carries besides its evidence.
Finding rank_finding(const Context& ctx, int64_t r, const char* subkind, double cost_s) {
  Finding f;
  f.kind = "straggler";
  f.subkind = subkind;
  f.ranks = {r};
  f.nodes = ctx.nodes_of({r});
  f.cost_s = cost_s;
  f.extra["gpu_uuid"] = ctx.set.ranks[static_cast<size_t>(r)].gpu_uuid;
  f.severity = std::clamp(cost_s / std::max(ctx.job_seconds(), 1e-9) * 2, 0.05, 1.0);
  f.next_command = next_command_for_straggler(ctx, r);
  return f;
}

// What the others waited for late ranks, s.  The part at ops their hosts issued late
// (OwnCompute::issued_late: the stream stood idle, waiting for the host) was held up on the
// host: when an average rank's threads waited for a CPU at least as long, it is not known to
// be theirs (as for imbalance and intermittent stragglers), and is left out.
double straggler_cost_s(const Context& ctx, const Lateness& l) {
  const double host = l.host_cost_ns / 1e9;
  return l.cost_ns / 1e9 - (host > 0 && ctx.host_wait_covers(host) ? host : 0);
}

// Ops that hold the job up now and then are one rank's only from this many on.
constexpr uint64_t kMinIntermittentOps = 3;

// A rank slow now and then: the outlier ops (detect/outlier_ops.cpp) have one owner,
// who is not late often enough to be a straggler (late.ranks), and what the job waited
// for it costs as much as a straggler's would have to.  (What is measured is a lower
// bound: ops that a member started the moment its stream freed show nothing.)
void detect_intermittent(const Context& ctx, const OutlierOps& outliers,
                         std::vector<Finding>& out) {
  const int64_t r = outliers.owner;
  if (r < 0) return;
  for (const Finding& f : out) {
    if (std::find(f.ranks.begin(), f.ranks.end(), r) != f.ranks.end()) return;
  }
  const uint64_t ops = outliers.ops_of(r);
  const double cost = outliers.covered_ns(r) / 1e9;
  const double job = ctx.job_seconds();
  if (ops < kMinIntermittentOps || cost < ctx.th.min_cost_fraction * job) return;
  // On an oversubscribed host a rank's process can be left waiting for a core for a
  // few time slices before op after op, the same one when it shares a core with busier
  // threads.  When an average rank's threads waited for a CPU at least as long as the job
  // waited for this one, its delays are not known to be its own (as for imbalance).
  if (ctx.host_wait_covers(cost)) return;
  double excess = 0;
  for (const OutlierOps::At& a : outliers.at) {
    if (a.op.last == r) excess += a.op.excess();
  }
  // The others' compute before its ops, in proportion (the module sums it over all).
  const double mean = outliers.mean_gap_ns * (excess / std::max(outliers.excess_ns, 1.0));
  CauseGuess cause = gpu_cause(ctx, {r});
  Finding f = rank_finding(ctx, r, "intermittent", cost);
  f.evidence = ctx.describe_rank(r) + " computed far longer than its peers before " +
               std::to_string(ops) + " of " + std::to_string(outliers.compared) + " shared ops (" +
               fmt("%.2f", excess / static_cast<double>(ops) / 1e6) + " ms or " +
               fmt("%.0f", 100 * excess / std::max(mean, 1.0)) +
               "% more than their mean each time, where they usually differ by " +
               fmt("%.1f", 100 * ctx.stats.median_gap_cv(RankStatsPass::SpreadOver::kBulk)) +
               "%): " + fmt("%.0f", 100 * outliers.wait_by_rank.at(r) / outliers.wait_ns) +
               "% of the waiting at such ops was for it; the job waited " + fmt("%.2f", cost) +
               " s for it. It is slow now and then, not always: look for periodic work on "
               "that rank (logging, checkpoints, evaluation, data loading) or a GPU that "
               "slows down at times. " +
               cause.sentence;
  f.extra["cause"] = cause.cause;
  f.extra["slowdown"] = excess / std::max(mean, 1.0);
  f.extra["outlier_ops"] = ops;
  f.confidence = confidence_from_cost(ctx, cost);
  out.push_back(std::move(f));
}

}  // namespace

void detect_stragglers(const Context& ctx, const LateRanks& late, const OutlierOps& outliers,
                       std::vector<Finding>& out) {
  if (late.ranks.empty()) {
    detect_intermittent(ctx, outliers, out);
    return;
  }
  const double job = ctx.job_seconds();
  std::vector<int64_t> remaining = late.ranks;
  // A whole node late together (noisy neighbour, node-level problem) is one finding.
  for (const LateSet& set : late.sets) {
    if (set.kind != LateSet::Kind::kNode) continue;
    const int ni = set.node;
    const auto& node_ranks = ctx.set.node_ranks[static_cast<size_t>(ni)];
    const std::string& node = ctx.set.nodes[static_cast<size_t>(ni)];
    Finding f;
    f.kind = "straggler";
    f.subkind = "node";
    f.ranks = node_ranks;
    f.nodes = {node};
    const Lateness sum = set_lateness(ctx, node_ranks);
    f.cost_s = straggler_cost_s(ctx, sum);
    const double rel = relative_excess(sum);
    CauseGuess cause = gpu_cause(ctx, node_ranks);
    f.evidence = "All " + std::to_string(node_ranks.size()) + " ranks of " + node + " compute " +
                 excess_text(sum) +
                 " before the ops they share with other nodes, the same for all of "
                 "them, so the node and not one GPU is slow (the others waited " +
                 fmt("%.2f", f.cost_s) + " s); " + cause.sentence;
    f.extra["cause"] = cause.cause;
    f.extra["slowdown"] = rel;
    f.severity = std::clamp(f.cost_s / std::max(job, 1e-9) * 2, 0.05, 1.0);
    f.confidence = 0.8;
    f.next_command = next_command_for_node_straggler(ctx, node);
    if (f.cost_s >= ctx.th.min_cost_fraction * job) out.push_back(std::move(f));
    for (int64_t r : node_ranks) {
      auto it = std::find(remaining.begin(), remaining.end(), r);
      if (it != remaining.end()) remaining.erase(it);
    }
  }
  const double min_cost = ctx.th.min_cost_fraction * job;
  // The late ranks left that are late against their peers, not only against other
  // stages (a heavier stage, unless the whole stage is), and how many of them cost the
  // job enough as they are.
  std::vector<std::pair<int64_t, Lateness>> alone;
  size_t costly = 0;
  for (int64_t r : remaining) {
    if (!late.any_alone({r})) continue;
    alone.emplace_back(r, pooled_lateness(ctx, r));
    costly += straggler_cost_s(ctx, alone.back().second) >= min_cost;
  }
  for (const auto& [r, l] : alone) {
    const double cost = straggler_cost_s(ctx, l);
    // A rank beside a slower one costs little now (the others wait for that one) and
    // as much as its own lateness once that one is fixed, when that one is a straggler
    // that costs the job as it is (a finding to fix).  Behind ranks that only arrive
    // later (held up outside the traced calls, as in an MPI barrier between benchmark
    // rounds) it costs what it costs.
    const bool beside_costly = costly > (cost >= min_cost ? 1u : 0u);
    const double potential = beside_costly ? potential_cost_s(ctx, r) : 0;
    if (std::max(cost, potential) < min_cost) continue;
    Finding f = rank_finding(ctx, r, "gpu", cost);
    const double rel =
        l.mean_gap() > l.mean_excess() ? l.mean_excess() / (l.mean_gap() - l.mean_excess()) : 0;
    CauseGuess cause = gpu_cause(ctx, {r});
    f.evidence =
        ctx.describe_rank(r) + " computes " + fmt("%.1f", 100 * rel) +
        "% longer than its peers doing the same work, more than " +
        fmt("%.0f", 100 * ctx.th.late_margin) + "% longer before " + std::to_string(l.above) +
        " of " + std::to_string(l.above + l.below) + " collectives, and arrives last at " +
        fmt("%.0f", 100.0 * static_cast<double>(l.last) /
                        static_cast<double>(std::max<uint64_t>(1, l.groups))) +
        "% of them; the others waited " + fmt("%.2f", cost) + " s for it" +
        (cost < min_cost ? " (a slower rank hides it; once that one is fixed it would cost about " +
                               fmt("%.2f", potential) + " s)"
                         : "") +
        ". " + cause.sentence;
    f.extra["cause"] = cause.cause;
    f.extra["slowdown"] = rel;
    f.extra["last_arrival_fraction"] =
        static_cast<double>(l.last) / static_cast<double>(std::max<uint64_t>(1, l.groups));
    f.extra["late_ops"] = l.above;
    f.extra["not_late_ops"] = l.below;
    f.confidence = std::clamp(0.5 + (l.positive_fraction() - 0.5), 0.3, 0.99);
    out.push_back(std::move(f));
  }
}

}  // namespace ringside::analysis
