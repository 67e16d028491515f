// Workload imbalance: ranks doing different amounts of work.  Two shapes:
//  - structural: the persistently late ranks are exactly one position of a
//    family of communicators (a data-parallel replica, a pipeline stage) or the
//    members of one communicator, are not all the ranks of one node (that is a
//    node straggler), and their GPUs are not slowed down;
//  - data-dependent: no rank is persistently late, but in some communicator the
//    members' compute differs widely from op to op and who is last keeps changing.
// Structure comes from the communicators' roles (match/comm_roles.h), inferred from
// membership alone, so communicators made by ncclCommSplit and by separate unique ids
// look the same.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "detect/context.h"
#include "report/format.h"
#include "report/next_command.h"

namespace ringside::analysis {
namespace {

// A family: the communicators of one role and size, members disjoint (the
// tensor-parallel groups, the data-parallel groups, the pipeline groups), with the
// roles of match/comm_roles.h.  A communicator with the same members as one already
// taken (a second data-parallel group for another bucket stream) adds nothing.
struct Family {
  std::vector<const CommInfo*> comms;
  std::string role;
};

bool disjoint(const CommInfo& a, const CommInfo& b) {
  for (int64_t m : a.members) {
    if (std::find(b.members.begin(), b.members.end(), m) != b.members.end()) return false;
  }
  return true;
}

std::vector<Family> comm_families(const Context& ctx) {
  std::vector<Family> families;
  std::set<std::vector<int64_t>> seen;
  for (const auto& c : ctx.set.comms) {
    if (c.role.empty() || c.role == "world" || c.nranks < 2) continue;
    if (std::find(c.members.begin(), c.members.end(), -1) != c.members.end()) continue;
    if (!seen.insert(c.members).second) continue;
    Family* home = nullptr;
    for (auto& f : families) {
      if (f.role != c.role || f.comms.front()->nranks != c.nranks) continue;
      if (std::all_of(f.comms.begin(), f.comms.end(),
                      [&](const CommInfo* o) { return disjoint(*o, c); })) {
        home = &f;
        break;
      }
    }
    if (home == nullptr) {
      families.emplace_back();
      home = &families.back();
      home->role = c.role;
    }
    home->comms.push_back(&c);
  }
  return families;
}

struct Structure {
  std::string label;
  std::string role;  // "dp_replica", "pp_stage", "tp_position", "comm"
  std::string advice;
  const CommInfo* comm = nullptr;
  int position = -1;
};

// Finds a communicator structure whose ranks are exactly `late`: one position
// across a family (data-parallel replicas first, then pipeline stages), else the
// members of one communicator.
bool match_structure(const Context& ctx, const std::set<int64_t>& late, Structure& out) {
  std::vector<Family> families = comm_families(ctx);
  auto order = [](const std::string& role) { return role == "dp" ? 0 : role == "pp" ? 1 : 2; };
  std::stable_sort(families.begin(), families.end(),
                   [&](const Family& a, const Family& b) { return order(a.role) < order(b.role); });
  for (const Family& fam : families) {
    if (fam.comms.size() < 2) continue;
    const size_t n = fam.comms.front()->members.size();
    for (size_t pos = 0; pos < n; ++pos) {
      std::set<int64_t> at;
      for (const CommInfo* c : fam.comms) at.insert(c->members[pos]);
      if (at != late) continue;
      out.comm = fam.comms.front();
      out.position = static_cast<int>(pos);
      const std::string across = " (position " + std::to_string(pos) + " in each of the " +
                                 std::to_string(fam.comms.size()) + " " + std::to_string(n) +
                                 "-rank communicators of that role)";
      if (fam.role == "dp") {
        out.role = "dp_replica";
        out.label = "data-parallel replica " + std::to_string(pos) + across;
        out.advice =
            "this replica gets more work per step than the others: balance the data across "
            "replicas (per-replica batch size or token count, length-bucketed sampling)";
      } else if (fam.role == "pp") {
        out.role = "pp_stage";
        out.label = "pipeline stage " + std::to_string(pos) + across;
        out.advice = "this stage does more work than the others: move layers off it";
      } else {
        out.role = "tp_position";
        out.label = "tensor-parallel position " + std::to_string(pos) + across;
        out.advice =
            "this shard of the tensor-parallel layers does more work: check how the layers are "
            "split";
      }
      return true;
    }
  }
  for (const auto& c : ctx.set.comms) {
    if (c.nranks == ctx.set.world_size) continue;
    std::set<int64_t> members(c.members.begin(), c.members.end());
    if (members != late) continue;
    out.comm = &c;
    // Ranks that send to or receive from ranks outside the set are a pipeline stage.
    bool p2p_out = false;
    for (const auto& p : ctx.groups.p2p()) {
      p2p_out = p2p_out || (members.count(p.src) != members.count(p.dst));
    }
    if (p2p_out) {
      out.role = "pp_stage";
      out.label = "a pipeline stage (the members of " + c.label + ")";
      out.advice = "this stage does more work than the others: move layers off it";
    } else {
      out.role = "comm";
      out.label = "the members of " + c.label;
      out.advice = "these ranks get more work than the others: check how work is partitioned";
    }
    return true;
  }
  return false;
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
bool detect_heavy_stage(const Context& ctx, std::vector<Finding>& out) {
  // Time outside every op misses compute done while ops that run alongside were in
  // flight; time outside the others counts waiting for them (the optimizer waits for
  // the last bucket).  Both must single out the same ranks.
  const std::set<int64_t> heavy = heavy_compute_ranks(ctx, &RankLateness::compute_ns);
  if (heavy.empty() || heavy != heavy_compute_ranks(ctx, &RankLateness::compute_held_ns))
    return false;
  const std::vector<int64_t> heavy_list(heavy.begin(), heavy.end());
  Structure s;
  if (gpu_cause(ctx, heavy_list).cause != "unknown" || !match_structure(ctx, heavy, s)) {
    return false;
  }
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
  f.extra["structure"] = s.role;
  if (s.position >= 0) f.extra[s.role == "dp_replica" ? "replica" : "stage"] = s.position;
  f.severity = std::clamp(cost / std::max(job, 1e-9) * 2, 0.05, 1.0);
  f.confidence = 0.7;
  f.next_command = next_command_for_imbalance(ctx, true);
  out.push_back(std::move(f));
  return true;
}

}  // namespace

void detect_imbalance(const Context& ctx, std::vector<int64_t>& late, std::vector<Finding>& out) {
  const double job = ctx.job_seconds();
  const auto& ranks = ctx.stats.ranks();
  // All ranks of one node late together are a node straggler, even when that node
  // holds exactly one replica or stage: the node is the simpler explanation, and
  // detect_stragglers reports it.  The structure is judged on the other late ranks.
  // The exception is a pipeline stage: stages are commonly unbalanced (embeddings, the
  // loss), so a stage that is also a node is reported as the stage, saying so.
  std::set<int64_t> late_set(late.begin(), late.end());
  const std::vector<int> nodes = late_nodes(ctx, late);
  Structure s;
  bool matched = late_set.size() >= 2 && match_structure(ctx, late_set, s);
  if (!matched || s.role != "pp_stage") {
    for (int ni : nodes) {
      for (int64_t r : ctx.set.node_ranks[static_cast<size_t>(ni)]) late_set.erase(r);
    }
    matched = late_set.size() >= 2 && match_structure(ctx, late_set, s);
  }
  if (matched) {
    const std::vector<int64_t> candidates(late_set.begin(), late_set.end());
    const bool slowed = gpu_cause(ctx, candidates).cause != "unknown";
    if (!slowed) {
      Lateness sum;
      for (int64_t r : candidates) sum.add(pooled_lateness(ctx, r));
      Finding f;
      f.kind = "imbalance";
      f.subkind = "structural";
      f.ranks = candidates;
      f.nodes = ctx.nodes_of(f.ranks);
      f.comm = s.comm->id;
      f.comm_label = s.comm->label;
      f.cost_s = sum.cost_ns / 1e9;
      const double rel = sum.mean_gap() > sum.mean_excess()
                             ? sum.mean_excess() / (sum.mean_gap() - sum.mean_excess())
                             : 0;
      f.evidence = std::to_string(candidates.size()) + " ranks forming " + s.label +
                   " consistently compute " + fmt("%.0f", 100 * rel) +
                   "% longer before the ops they share with the rest, with healthy GPU "
                   "counters (the others waited " +
                   fmt("%.2f", f.cost_s) + " s): " + s.advice + ".";
      const std::vector<std::string> on = ctx.nodes_of(candidates);
      if (on.size() == 1 && ctx.set.node_ranks.size() > 1 &&
          ctx.set.node_ranks[static_cast<size_t>(
                                 ctx.set.ranks[static_cast<size_t>(candidates.front())].node_index)]
                  .size() == candidates.size()) {
        f.evidence += " They are also exactly the ranks of " + on.front() +
                      ", which a slow node would look the same as.";
      }
      f.extra["pattern"] = "structural";
      f.extra["structure"] = s.role;
      if (s.position >= 0) f.extra[s.role == "dp_replica" ? "replica" : "stage"] = s.position;
      f.severity = std::clamp(f.cost_s / std::max(job, 1e-9) * 2, 0.05, 1.0);
      f.confidence = 0.75;
      f.next_command = next_command_for_imbalance(ctx, true);
      if (f.cost_s >= ctx.th.min_cost_fraction * job) out.push_back(std::move(f));
      late.erase(std::remove_if(late.begin(), late.end(),
                                [&](int64_t r) { return late_set.count(r) != 0; }),
                 late.end());
      return;
    }
  }
  if (!late.empty()) return;
  if (detect_heavy_stage(ctx, out)) return;
  // Data-dependent: lateness with no persistent owner, judged per communicator (the
  // spread is between replicas or stages; communicators inside a replica, where every
  // member does the same work, would hide it in a job-wide median).
  const std::vector<double> cv_by_comm = ctx.stats.gap_cv_by_comm();
  const std::vector<double> sd_by_comm = ctx.stats.gap_sd_ns_by_comm();
  double cost = 0, cv = 0;
  uint64_t lasts = 0, top_last = 0;
  size_t members = 2;
  std::map<int64_t, double> cost_by_rank;
  for (const auto& c : ctx.set.comms) {
    const size_t ci = static_cast<size_t>(c.index);
    if (c.present < 2 || cv_by_comm[ci] < ctx.th.imbalance_cv ||
        sd_by_comm[ci] < ctx.th.imbalance_min_sd_ns) {
      continue;
    }
    cv = std::max(cv, cv_by_comm[ci]);
    members = std::max(members, static_cast<size_t>(c.present));
    for (int64_t m : c.members) {
      if (m < 0) continue;
      for (const auto& [cj, l] : ranks[static_cast<size_t>(m)].per_comm) {
        if (cj != c.index) continue;
        cost += l.cost_ns / 1e9;
        cost_by_rank[m] += l.cost_ns;
        lasts += l.last;
        top_last = std::max(top_last, l.last);
      }
    }
  }
  if (lasts == 0 || cost < ctx.th.imbalance_min_cost_fraction * job) return;
  // No owner: nobody is last much more often than a fair share would allow.
  const double top_share = static_cast<double>(top_last) / static_cast<double>(lasts);
  if (top_share > std::max(0.5, 2.0 / static_cast<double>(members))) return;
  std::vector<std::pair<double, int64_t>> by_cost;
  for (const auto& [r, c] : cost_by_rank) {
    if (c > 0) by_cost.emplace_back(c, r);
  }
  std::sort(by_cost.rbegin(), by_cost.rend());
  Finding f;
  f.kind = "imbalance";
  f.subkind = "data_dependent";
  double covered = 0;
  for (const auto& [c, r] : by_cost) {
    if (covered >= 0.8 * cost * 1e9 || f.ranks.size() >= 32) break;
    f.ranks.push_back(r);
    covered += c;
  }
  std::sort(f.ranks.begin(), f.ranks.end());
  f.nodes = ctx.nodes_of(f.ranks);
  f.cost_s = cost;
  f.evidence =
      "Compute time before shared ops varies by " + fmt("%.0f", 100 * cv) +
      "% across ranks doing the same step, and the slowest rank changes from op to op (no rank is "
      "last more than " +
      fmt("%.0f", 100 * top_share) +
      "% of the time): the work depends on the data (e.g. sequence lengths); ranks waited " +
      fmt("%.2f", cost) + " s in total.";
  f.extra["pattern"] = "data_dependent";
  f.extra["gap_cv"] = cv;
  f.severity = std::clamp(cost / std::max(job, 1e-9) * 2, 0.05, 1.0);
  f.confidence = std::clamp(cv / (3 * ctx.th.imbalance_cv), 0.3, 0.9);
  f.next_command = next_command_for_imbalance(ctx, false);
  out.push_back(std::move(f));
}

}  // namespace ringside::analysis
