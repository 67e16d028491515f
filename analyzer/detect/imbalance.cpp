// Workload imbalance: ranks doing different amounts of work.  Two shapes:
//  - structural: the persistently late ranks are exactly one position of a
//    family of sibling communicators (a pipeline stage) or the members of one
//    communicator, and their GPUs are not slowed down;
//  - data-dependent: no rank is persistently late, but the members' compute
//    gaps differ widely from op to op and who is last keeps changing.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "detect/context.h"
#include "report/format.h"
#include "report/next_command.h"

namespace ringside::analysis {
namespace {

struct Structure {
  std::string label;
  const CommInfo* comm = nullptr;
  int position = -1;
};

// Finds a communicator structure whose ranks are exactly `late`.
bool match_structure(const Context& ctx, const std::set<int64_t>& late, Structure& out) {
  // Sibling families: splits of the same parent with the same ordinal and size.
  std::map<std::tuple<uint64_t, uint32_t, int>, std::vector<const CommInfo*>> families;
  for (const auto& c : ctx.set.comms) {
    if (c.parent != 0 && c.nranks >= 2) families[{c.parent, c.ordinal, c.nranks}].push_back(&c);
  }
  for (const auto& [key, fam] : families) {
    const int n = std::get<2>(key);
    for (int pos = 0; pos < n; ++pos) {
      std::set<int64_t> at;
      for (const CommInfo* c : fam) {
        if (static_cast<size_t>(pos) < c->members.size() &&
            c->members[static_cast<size_t>(pos)] >= 0) {
          at.insert(c->members[static_cast<size_t>(pos)]);
        }
      }
      if (at == late) {
        out.comm = fam.front();
        out.position = pos;
        out.label = "pipeline stage " + std::to_string(pos) + " (position " + std::to_string(pos) +
                    " in each of the " + std::to_string(fam.size()) + " " + std::to_string(n) +
                    "-rank communicators split with ordinal " + std::to_string(std::get<1>(key)) +
                    ")";
        return true;
      }
    }
  }
  for (const auto& c : ctx.set.comms) {
    if (c.nranks == ctx.set.world_size) continue;
    std::set<int64_t> members(c.members.begin(), c.members.end());
    if (members == late) {
      out.comm = &c;
      out.label = "the members of " + c.label;
      return true;
    }
  }
  return false;
}

// The ranks that compute clearly longer between communication calls than all
// the others (the upper side of the widest gap in the sorted compute times),
// or empty.  Catches stages that meet only in send/recv, where no collective
// measures their lateness.
std::set<int64_t> heavy_compute_ranks(const Context& ctx) {
  const auto& ranks = ctx.stats.ranks();
  std::vector<std::pair<double, int64_t>> by_compute;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].compute_ns > 0) by_compute.emplace_back(ranks[r].compute_ns, r);
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
  const std::set<int64_t> heavy = heavy_compute_ranks(ctx);
  if (heavy.empty()) return false;
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
  f.evidence =
      std::to_string(heavy.size()) + " ranks forming " + s.label + " compute " + fmt("%.0f", more) +
      "% longer between communication calls than the rest, with healthy GPU counters, "
      "while the others wait " +
      fmt("%.2f", cost) + " s longer inside send/recv and collectives: the partitioning is uneven.";
  f.extra["pattern"] = "structural";
  f.extra["signal"] = "compute_time";
  if (s.position >= 0) f.extra["stage"] = s.position;
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
  if (late.size() >= 2) {
    std::set<int64_t> late_set(late.begin(), late.end());
    Structure s;
    const bool slowed = gpu_cause(ctx, late).cause != "unknown";
    if (!slowed && match_structure(ctx, late_set, s)) {
      Lateness sum;  // in the comm where each rank is most behind
      for (int64_t r : late) {
        const Lateness* worst = nullptr;
        for (const auto& [ci, l] : ranks[static_cast<size_t>(r)].per_comm) {
          if (worst == nullptr || l.mean_excess() > worst->mean_excess()) worst = &l;
        }
        if (worst != nullptr) sum.add(*worst);
      }
      Finding f;
      f.kind = "imbalance";
      f.subkind = "structural";
      f.ranks.assign(late_set.begin(), late_set.end());
      f.nodes = ctx.nodes_of(f.ranks);
      f.comm = s.comm->id;
      f.comm_label = s.comm->label;
      f.cost_s = 0;
      for (int64_t r : late) f.cost_s += ranks[static_cast<size_t>(r)].total.cost_ns / 1e9;
      const double rel = sum.mean_gap() > sum.mean_excess()
                             ? sum.mean_excess() / (sum.mean_gap() - sum.mean_excess())
                             : 0;
      f.evidence = std::to_string(late_set.size()) + " ranks forming " + s.label +
                   " consistently do " + fmt("%.0f", 100 * rel) +
                   "% more work between collectives than the rest, with healthy GPU "
                   "counters: the partitioning is uneven (the others waited " +
                   fmt("%.2f", f.cost_s) + " s).";
      f.extra["pattern"] = "structural";
      if (s.position >= 0) f.extra["stage"] = s.position;
      f.severity = std::clamp(f.cost_s / std::max(job, 1e-9) * 2, 0.05, 1.0);
      f.confidence = 0.75;
      f.next_command = next_command_for_imbalance(ctx, true);
      if (f.cost_s >= ctx.th.min_cost_fraction * job) out.push_back(std::move(f));
      late.clear();
      return;
    }
  }
  if (!late.empty()) return;
  if (detect_heavy_stage(ctx, out)) return;
  // Data-dependent: lateness with no persistent owner.
  const double cv = ctx.stats.median_gap_cv();
  double cost = 0;
  uint64_t lasts = 0, top_last = 0;
  std::vector<std::pair<double, int64_t>> by_cost;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Lateness& l = ranks[r].total;
    cost += l.cost_ns / 1e9;
    lasts += l.last;
    top_last = std::max(top_last, l.last);
    if (l.cost_ns > 0) by_cost.emplace_back(l.cost_ns, static_cast<int64_t>(r));
  }
  if (cv < ctx.th.imbalance_cv || ctx.stats.median_gap_sd_ns() < ctx.th.imbalance_min_sd_ns ||
      cost < ctx.th.imbalance_min_cost_fraction * job || lasts == 0) {
    return;
  }
  if (static_cast<double>(top_last) > 0.5 * static_cast<double>(lasts)) return;
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
      "Compute time between collectives varies by " + fmt("%.0f", 100 * cv) +
      "% across ranks doing the same step, and the slowest rank changes from op to op (no rank is "
      "last more than " +
      fmt("%.0f", 100.0 * static_cast<double>(top_last) / static_cast<double>(lasts)) +
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
