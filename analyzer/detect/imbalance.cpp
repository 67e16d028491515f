// Workload imbalance: ranks doing different amounts of work.  Two shapes:
//  - structural: late ranks that make up a structure of the job (a pipeline stage,
//    a data-parallel replica, ...: detect/late_sets.cpp) and whose GPUs are not
//    slowed down; or, where stages meet only in send/recv, ranks that compute
//    clearly longer than all others and make up such a structure;
//  - data-dependent: no rank is persistently late, but in some communicator the
//    members' compute differs widely from op to op and nobody is last much more
//    often than the others.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "detect/context.h"
#include "report/format.h"
#include "report/next_command.h"

namespace ringside::analysis {
namespace {

// The structure's kind and position as report fields.
void describe_structure(const LateSet& s, Finding& f) {
  switch (s.kind) {
    case LateSet::Kind::kStage:
      f.extra["structure"] = "pp_stage";
      break;
    case LateSet::Kind::kReplica:
      f.extra["structure"] = "dp_replica";
      break;
    case LateSet::Kind::kTensorPosition:
      f.extra["structure"] = "tp_position";
      break;
    default:
      f.extra["structure"] = "comm";
      break;
  }
  if (s.position < 0) return;
  f.extra[s.kind == LateSet::Kind::kReplica ? "replica"
          : s.kind == LateSet::Kind::kStage ? "stage"
                                            : "position"] = s.position;
}

// The ranks that compute clearly longer between communication calls than all
// the others (the upper side of the widest gap in the sorted compute times),
// or empty.  Catches stages that meet only in send/recv, where no collective
// measures their lateness.  `compute` is one of the two measures of rank_stats.h.
std::set<int64_t> heavy_compute_ranks(const Context& ctx, double RankLateness::*compute) {
  const auto& ranks = ctx.stats.ranks();
  std::vector<std::pair<double, int64_t>> by_compute;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].*compute > 0) by_compute.emplace_back(ranks[r].*compute, r);
  }
  if (by_compute.size() < 3) return {};
  std::sort(by_compute.begin(), by_compute.end());
  size_t cut = 0;  // first index of the heavy side
  double widest = 0;
  for (size_t i = 1; i < by_compute.size(); ++i) {
    const double ratio = by_compute[i].first / by_compute[i - 1].first;
    if (ratio > widest) {
      widest = ratio;
      cut = i;
    }
  }
  if (widest < ctx.th.stage_separation || by_compute.size() - cut < 2) return {};
  double heavy = 0, light = 0;
  for (size_t i = 0; i < by_compute.size(); ++i) (i < cut ? light : heavy) += by_compute[i].first;
  heavy /= static_cast<double>(by_compute.size() - cut);
  light /= static_cast<double>(cut);
  if (heavy < ctx.th.stage_compute_ratio * light) return {};
  std::set<int64_t> out;
  for (size_t i = cut; i < by_compute.size(); ++i) out.insert(by_compute[i].second);
  return out;
}

// Structural imbalance seen in compute time rather than collective lateness.
bool detect_heavy_stage(const Context& ctx, const std::vector<LateSet>& candidates,
                        std::vector<Finding>& out) {
  // Each rank's compute is summed up to its last op: totals compare only where every
  // rank's record ends with the job.  In a job that hung or desynced, each rank ran on
  // until it waited for another, some further into their step than others; in its first
  // steps, how far they got weighs as much as their work (a quarter of it, seen in a
  // hybrid job that hung in its third step).
  if (any_stopped_the_job(out)) return false;
  // Time outside every op misses compute done while ops that run alongside were in
  // flight; time outside the others counts waiting for them (the optimizer waits for
  // the last bucket).  Both must single out the same ranks.
  const std::set<int64_t> heavy = heavy_compute_ranks(ctx, &RankLateness::compute_ns);
  if (heavy.empty() || heavy != heavy_compute_ranks(ctx, &RankLateness::compute_held_ns))
    return false;
  const std::vector<int64_t> heavy_list(heavy.begin(), heavy.end());
  const std::optional<LateSet> structure = structure_of(candidates, heavy);
  if (!structure || gpu_cause(ctx, heavy_list).cause != "unknown") return false;
  const LateSet& s = *structure;
  const auto& ranks = ctx.stats.ranks();
  double heavy_compute = 0, light_compute = 0, heavy_inside = 0, light_inside = 0;
  size_t light_n = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].compute_ns <= 0) continue;
    const bool h = heavy.count(static_cast<int64_t>(r)) != 0;
    (h ? heavy_compute : light_compute) += ranks[r].compute_ns;
    (h ? heavy_inside : light_inside) += ranks[r].inside_ns;
    light_n += h ? 0 : 1;
  }
  const double hn = static_cast<double>(heavy.size());
  const double ln = static_cast<double>(light_n);
  // The others' extra time inside communication calls is the time they waited.
  const double cost = std::max(0.0, light_inside / ln - heavy_inside / hn) / 1e9;
  const double job = ctx.job_seconds();
  if (cost < ctx.th.imbalance_min_cost_fraction * job) return false;
  Finding f;
  f.kind = "imbalance";
  f.subkind = "structural";
  f.ranks = heavy_list;
  f.nodes = ctx.nodes_of(f.ranks);
  f.comm = s.comm->id;
  f.comm_label = s.comm->label;
  f.cost_s = cost;
  const double more = 100 * (heavy_compute / hn / (light_compute / ln) - 1);
  f.evidence = std::to_string(heavy.size()) + " ranks forming " + s.label + " compute " +
               fmt("%.0f", more) +
               "% longer between communication calls than the rest, with healthy GPU counters, "
               "while the others wait " +
               fmt("%.2f", cost) + " s longer inside send/recv and collectives: " + s.advice + ".";
  f.extra["pattern"] = "structural";
  f.extra["signal"] = "compute_time";
  describe_structure(s, f);
  f.severity = std::clamp(cost / std::max(job, 1e-9) * 2, 0.05, 1.0);
  f.confidence = 0.7;
  f.next_command = next_command_for_imbalance(ctx, true);
  out.push_back(std::move(f));
  return true;
}

// Compute that differs between ranks by this multiple of what it differs by between
// ranks doing the same work differs by work: under noise alone the spreads are alike.
constexpr double kSpreadOverNoise = 2;

// What n members wait at each of `ops` ops when their compute differs by `sigma_ns` in
// every op: for the slowest, expected_max_normal(n) sigmas past their mean, each of
// them, rank-ns.
double spread_wait(double sigma_ns, int n, double ops) {
  return sigma_ns * expected_max_normal(n) * n * ops;
}

// The same for a usual spread of `sd_ns` (the median sample deviation over n members).
// A wait beyond it comes from a few ops far past the usual spread, which a median does
// not see: outlier ops where one rank stands out (OutlierOps, costed apart), else delays
// of the host that strike a rank now and then (a thread that waited for a CPU, a pause),
// which are no work that differs.
double usual_spread_wait(double sd_ns, int n, double ops) {
  return spread_wait(sd_ns / median_sd_in_sigmas(n), n, ops);
}

// Data-dependent imbalance: compute before shared ops that differs widely between the
// ranks (or, through sibling communicators, between the replicas) doing the same step,
// with no persistent owner, costing enough.  Two forms:
//  - spread in most ops: every batch differs (sequence lengths in every step); judged
//    per communicator and per family of siblings, since the spread is between replicas
//    or stages: communicators inside a replica, where every member does the same work,
//    would hide it in a job-wide median;
//  - spread in a few ops, far beyond the usual: now and then one rank gets a much
//    larger piece of work (a long sample), a different one each time; the usual spread
//    (a median) does not see it, so the ops are counted one by one.
void detect_data_dependent(const Context& ctx, const OutlierOps& outliers,
                           std::vector<Finding>& out) {
  const double job = ctx.job_seconds();
  const auto& ranks = ctx.stats.ranks();
  const std::vector<double> sd_by_comm = ctx.stats.gap_sd_ns_by_comm();
  // Whether the compute differs is judged where each member computed in one stretch, by
  // the members' lower tail (rank_stats.h: a delay of the host stays rare in one stretch,
  // and lengthens it, far above the others); what it costs, over every op.
  const auto tail = RankStatsPass::SpreadOver::kLowerTail;
  const auto [cv_tail, sd_tail] = ctx.stats.gap_spread_by_comm(tail);
  bool differs = false;
  double wait = 0, cv = 0, top_share = 0;  // wait: rank-ns
  std::map<int64_t, double> cost_by_rank;  // what the others waited when it was last
  // No owner: nobody is last much more often than a fair share would allow (a
  // communicator with one has a rank doing more, or ranks doing other work, as the last
  // pipeline stage in a world all-reduce: not data that varies).  False: one has.
  auto no_owner = [&](const std::vector<const Lateness*>& members, size_t n) {
    uint64_t lasts = 0, top_last = 0;
    for (const Lateness* l : members) {
      lasts += l->last;
      top_last = std::max(top_last, l->last);
    }
    if (lasts == 0) return true;
    const double share = static_cast<double>(top_last) / static_cast<double>(lasts);
    top_share = std::max(top_share, share);
    return share <= std::max(0.5, 2.0 / static_cast<double>(n));
  };
  // The quietest communicator's spread is the job's noise (launch jitter, host load):
  // its members do the same work (a tensor-parallel group shares its replica's data).
  // A spread clearly beyond it is work, however short the gaps; without such a
  // reference, only a spread of imbalance_min_sd_ns is.  Spreads are medians of sample
  // deviations, which run lower the fewer members there are: they compare in sigmas.
  // The quietest is judged by its members bar the slowest (its usual spread, as outlier
  // ops take it), as one stretch is.
  double noise = 0;  // sigmas, ns
  // Whether the quietest is ranks known to share their data: a tensor-parallel group.
  bool same_data_reference = false;
  for (const auto& c : ctx.set.comms) {
    const double sd = outliers.usual_sd_by_comm[static_cast<size_t>(c.index)];
    if (c.present < 2 || sd <= 0) continue;
    const double sigma = sd / median_sd_in_sigmas(bulk_members(c.present));
    if (noise == 0 || sigma < noise) noise = sigma;
    same_data_reference = same_data_reference || c.role == "tp";
  }
  // The same in lower tails, in ns and relative to the gaps (coefficients of variation):
  // the members' own noise grows with the stretch they computed (a data-parallel bucket's
  // after 10-12 ms of backward varies twice as far in ns as a tensor-parallel op's after
  // 6 ms), and so does work that differs; launch jitter does not (a few microseconds
  // between ops issued back to back is a large share of them). Where there are
  // tensor-parallel groups, their median is the noise: the quietest of several is the one
  // whose ops happened to vary least (of eight pairs, about a quarter below their median),
  // which takes much of the margin. Otherwise the quietest communicator's, which may itself
  // vary with the data.
  double tail_noise_ns = 0, tail_noise_cv = 0;  // sigmas
  {
    std::vector<double> same_data_ns, same_data_cv;
    for (const auto& c : ctx.set.comms) {
      const size_t ci = static_cast<size_t>(c.index);
      if (c.present < 2 || sd_tail[ci] <= 0 || cv_tail[ci] <= 0) continue;
      const double in_sigmas = median_lower_tail_in_sigmas(c.present);
      const double ns = sd_tail[ci] / in_sigmas, rel = cv_tail[ci] / in_sigmas;
      if (c.role == "tp") {
        same_data_ns.push_back(ns);
        same_data_cv.push_back(rel);
      }
      if (tail_noise_ns == 0 || ns < tail_noise_ns) tail_noise_ns = ns;
      if (tail_noise_cv == 0 || rel < tail_noise_cv) tail_noise_cv = rel;
    }
    if (!same_data_ns.empty()) {
      tail_noise_ns = median_of(std::move(same_data_ns));
      tail_noise_cv = median_of(std::move(same_data_cv));
    }
  }
  // A spread of `sd` whose median is `in_sigmas` sigmas, beyond the noise `reference`
  // (sigmas, ns) measured the same way.
  auto beyond = [&](double sd, double in_sigmas, double reference) {
    return sd >= ctx.th.imbalance_min_sd_ns ||
           (reference > 0 && sd / in_sigmas >= kSpreadOverNoise * reference);
  };
  // The same for communicator `ci`'s lower tail, beyond the noise both in ns and relative
  // to the gaps.
  auto tail_beyond = [&](size_t ci, int n) {
    const double in_sigmas = median_lower_tail_in_sigmas(n);
    return sd_tail[ci] >= ctx.th.imbalance_min_sd_ns ||
           (tail_noise_ns > 0 && sd_tail[ci] / in_sigmas >= kSpreadOverNoise * tail_noise_ns &&
            cv_tail[ci] / in_sigmas >= kSpreadOverNoise * tail_noise_cv);
  };
  // Outlier ops are costed apart from the spread: with no owner as what the whole job
  // waited for them; with one, they are a rank slow now and then (detect/straggler.cpp).
  const bool ownerless =
      !outliers.at.empty() && outliers.wait_by_rank.size() >= 2 && outliers.owner < 0;
  double outlier_cost_ns = 0;
  if (ownerless) {
    outlier_cost_ns = outliers.covered_ns();
    // Delays of the host land on a rank's stretches of compute independently: in a long
    // job with many ranks a few fall close by and make runs by chance, costing little.
    // Extra work costs the job on its own.
    differs = outlier_cost_ns >= ctx.th.imbalance_min_cost_fraction * job * 1e9;
    for (const auto& [r, w] : outliers.wait_by_rank) cost_by_rank[r] += w;
  }
  for (const auto& c : ctx.set.comms) {
    const size_t ci = static_cast<size_t>(c.index);
    if (c.present < 2 || !beyond(sd_by_comm[ci], median_sd_in_sigmas(c.present), noise)) continue;
    std::vector<std::pair<int64_t, const Lateness*>> in_comm;
    std::vector<const Lateness*> members;
    for (int64_t m : c.members) {
      if (m < 0) continue;
      for (const auto& [cj, l] : ranks[static_cast<size_t>(m)].per_comm) {
        if (cj != c.index) continue;
        in_comm.emplace_back(m, &l);
        members.push_back(&l);
      }
    }
    if (!no_owner(members, static_cast<size_t>(c.present))) continue;
    if (tail_beyond(ci, c.present)) {
      differs = true;
      cv = std::max(cv, cv_tail[ci]);
    }
    const RankStatsPass::Spread sp = ctx.stats.spread(c.index);
    const double ops = static_cast<double>(sp.compared);
    double data_wait = std::min(sp.wait_ns - outliers.wait_by_comm[ci],
                                usual_spread_wait(sd_by_comm[ci], c.present, ops));
    // What the job's own noise costs on its own: members that each vary by `noise` wait
    // for the slowest of them, expected_max_normal(n) sigmas past their mean, at every
    // op.  Across many members that is a large share of the job (2% per rank and step
    // over 1024 ranks: 6%), yet no data differs.  Only the wait beyond it is the data's,
    // where the noise is measured on ranks known to share their data (without such a
    // reference the quietest communicator may vary with the data itself).
    if (same_data_reference) {
      data_wait -= spread_wait(noise, c.present, ops);
    }
    wait += std::max(0.0, data_wait);
    for (const auto& [m, l] : in_comm) cost_by_rank[m] += l->cost_ns;
  }
  // Between sibling communicators (match/sibling_lateness.h): replicas whose members meet
  // the others only in ops without a reading (overlapped buckets) differ there, not
  // inside any one communicator.
  for (const SiblingLateness::Family& fam : ctx.siblings.families()) {
    const int k = static_cast<int>(fam.comms.size());
    if (!beyond(fam.median_sd_ns, median_sd_in_sigmas(k), noise)) continue;
    std::vector<const Lateness*> members;
    for (int ci : fam.comms) {
      if (const Lateness* l = ctx.siblings.of(ci)) members.push_back(l);
    }
    if (!no_owner(members, fam.comms.size())) continue;
    differs = true;
    cv = std::max(cv, fam.median_cv);
    wait += std::min(
        fam.spread_wait_ns,
        fam.members * usual_spread_wait(fam.median_sd_ns, k, static_cast<double>(fam.compared)));
    for (int ci : fam.comms) {
      const Lateness* l = ctx.siblings.of(ci);
      if (l == nullptr) continue;
      const auto& m = ctx.set.comms[static_cast<size_t>(ci)].members;
      for (int64_t r : m) cost_by_rank[r] += l->cost_ns / static_cast<double>(m.size());
    }
  }
  size_t traced = 0;
  for (const auto& ri : ctx.set.ranks) traced += ri.has_file;
  // Per rank: what an average rank waited, a share of the job's time.
  const double cost =
      (wait / static_cast<double>(std::max<size_t>(1, traced)) + outlier_cost_ns) / 1e9;
  if (!differs || cost < ctx.th.imbalance_min_cost_fraction * job || cost_by_rank.empty()) return;
  // Threads that waited for a CPU as long as ranks waited for each other: a host with
  // more runnable threads than cores delays whichever wakes up, a different rank each
  // time, which looks the same.  The work is not known to differ.
  if (ctx.host_wait_covers(cost)) return;
  std::vector<std::pair<double, int64_t>> by_cost;
  double named = 0;
  for (const auto& [r, c] : cost_by_rank) {
    if (c <= 0) continue;
    by_cost.emplace_back(c, r);
    named += c;
  }
  std::sort(by_cost.rbegin(), by_cost.rend());
  Finding f;
  f.kind = "imbalance";
  f.subkind = "data_dependent";
  double covered = 0;
  for (const auto& [c, r] : by_cost) {
    if (covered >= 0.8 * named || f.ranks.size() >= 32) break;
    f.ranks.push_back(r);
    covered += c;
  }
  std::sort(f.ranks.begin(), f.ranks.end());
  f.nodes = ctx.nodes_of(f.ranks);
  f.cost_s = cost;
  const std::string waited = "each rank waited " + fmt("%.2f", cost) +
                             " s on average for slower ones (" +
                             fmt("%.0f", 100 * cost / std::max(job, 1e-9)) + "% of the job).";
  if (ownerless && outlier_cost_ns * static_cast<double>(traced) >= wait) {
    f.evidence =
        "In " + std::to_string(outliers.at.size()) + " of " + std::to_string(outliers.compared) +
        " shared ops one rank computed far longer before the op than the others (" +
        fmt("%.2f", outliers.excess_ns / static_cast<double>(outliers.at.size()) / 1e6) +
        " ms or " + fmt("%.0f", 100 * outliers.excess_ns / std::max(outliers.mean_gap_ns, 1.0)) +
        "% more than their mean, where they usually differ by " +
        fmt("%.1f", 100 * ctx.stats.median_gap_cv(RankStatsPass::SpreadOver::kBulk)) +
        "%), a different rank each time (none caused more than " +
        fmt("%.0f", 100 * outliers.top_share()) +
        "% of that wait): some steps give some ranks much more work (e.g. long "
        "samples); " +
        waited;
    f.extra["outlier_ops"] = outliers.at.size();
  } else {
    f.evidence =
        "Compute time before shared ops varies by " + fmt("%.0f", 100 * cv) +
        "% across ranks doing the same step, and the slowest changes from op to op (none is "
        "last more than " +
        fmt("%.0f", 100 * top_share) +
        "% of the time): the work depends on the data (e.g. sequence lengths); " + waited;
  }
  f.extra["pattern"] = "data_dependent";
  f.extra["gap_cv"] = cv;
  f.severity = std::clamp(cost / std::max(job, 1e-9) * 2, 0.05, 1.0);
  f.confidence = confidence_from_cost(ctx, cost);
  f.next_command = next_command_for_imbalance(ctx, false);
  out.push_back(std::move(f));
}

}  // namespace

void detect_imbalance(const Context& ctx, LateRanks& late, const OutlierOps& outliers,
                      std::vector<Finding>& out) {
  const double job = ctx.job_seconds();
  // Late ranks that make up a structure of the job (not a node: detect_stragglers
  // reports those) with healthy GPU counters get more work than the rest.
  bool structural = false;
  for (const LateSet& s : late.sets) {
    if (s.kind == LateSet::Kind::kNode) continue;
    if (gpu_cause(ctx, s.ranks).cause != "unknown") continue;
    // Ranks late only against other stages are late with their whole stage or not at
    // all: part of a stage is no structure (the stage is judged by compute time below).
    if (s.kind != LateSet::Kind::kStage && !late.any_alone(s.ranks)) continue;
    structural = true;
    const Lateness sum = set_lateness(ctx, s.ranks);
    Finding f;
    f.kind = "imbalance";
    f.subkind = "structural";
    f.ranks = s.ranks;
    f.nodes = ctx.nodes_of(f.ranks);
    f.comm = s.comm->id;
    f.comm_label = s.comm->label;
    f.cost_s = sum.cost_ns / 1e9;
    f.evidence = std::to_string(s.ranks.size()) + " ranks forming " + s.label +
                 " consistently compute " + excess_text(sum) +
                 " before the ops they share with the rest, with healthy GPU "
                 "counters (the others waited " +
                 fmt("%.2f", f.cost_s) + " s): " + s.advice + ".";
    const std::vector<std::string> on = ctx.nodes_of(s.ranks);
    if (on.size() == 1 && ctx.set.nodes.size() > 1 &&
        ctx.set.node_ranks[static_cast<size_t>(
                               ctx.set.ranks[static_cast<size_t>(s.ranks.front())].node_index)]
                .size() == s.ranks.size()) {
      f.evidence += " They are also exactly the ranks of " + on.front() +
                    ", which a slow node would look the same as.";
    }
    f.extra["pattern"] = "structural";
    describe_structure(s, f);
    f.severity = std::clamp(f.cost_s / std::max(job, 1e-9) * 2, 0.05, 1.0);
    f.confidence = 0.75;
    f.next_command = next_command_for_imbalance(ctx, true);
    if (f.cost_s >= ctx.th.min_cost_fraction * job) out.push_back(std::move(f));
    late.ranks.erase(std::remove_if(late.ranks.begin(), late.ranks.end(),
                                    [&](int64_t r) {
                                      return std::binary_search(s.ranks.begin(), s.ranks.end(), r);
                                    }),
                     late.ranks.end());
  }
  if (structural) return;
  // Ranks late only against other stages (late.alone) are no stragglers of their own:
  // their stage may do more work, seen in compute time below.
  if (!late.any_alone(late.ranks) && detect_heavy_stage(ctx, late.candidates, out)) {
    // Its ranks late only against other stages are late with it: part of the stage, or
    // the ranks of a node in it, are no straggler of their own.
    const std::vector<int64_t>& heavy = out.back().ranks;
    auto in_heavy = [&](int64_t r) { return std::binary_search(heavy.begin(), heavy.end(), r); };
    std::erase_if(late.ranks, in_heavy);
    std::erase_if(late.sets, [&](const LateSet& s) {
      return std::all_of(s.ranks.begin(), s.ranks.end(), in_heavy);
    });
    return;
  }
  if (!late.ranks.empty()) return;
  detect_data_dependent(ctx, outliers, out);
}

}  // namespace ringside::analysis
