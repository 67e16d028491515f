// Which ranks are late, and which of them are late together.
//
// A rank is late when its own compute before the ops it shares exceeds the other
// members' persistently: a sequential sign test per (rank, communicator) and per
// rank over every op it shares, with the false-alarm rate bounded for the whole job
// (rank_stats.h).
//
// Late ranks that make up a node, a pipeline stage, a data-parallel replica, a
// tensor-parallel position or the members of one communicator are one cause, not
// several.  A set is taken when at least two of its ranks are late and each of the
// others is late at the level of a test of that set alone (given two late members,
// the question is only whether the rest are too).  Sets are taken greedily: the one
// explaining the most late ranks first; between sets explaining as many, a pipeline
// stage before a node (stages are commonly unbalanced: embeddings, the loss), a node
// before a replica or any other structure (a slow node is the likelier cause when
// the replica is the node).  Structure comes from the communicators' roles
// (match/comm_roles.h), inferred from membership alone, so communicators made by
// ncclCommSplit and from separate unique ids look the same.
#include <algorithm>
#include <cmath>
#include <set>

#include "detect/context.h"
#include "match/comm_roles.h"
#include "report/format.h"

namespace ringside::analysis {
namespace {

bool late_in(const Context& ctx, const Lateness& l, double threshold) {
  return l.groups >= static_cast<uint64_t>(ctx.th.min_groups) && l.late_evidence() >= threshold;
}

// Tests made on one rank: one per communicator it was judged in, one pooled over them
// when there are several, and one per communicator it was compared through against
// that communicator's siblings (match/sibling_lateness.h).
size_t tests_of(const Context& ctx, int64_t rank) {
  size_t comms = 0;
  for (const auto& [ci, l] : ctx.stats.ranks()[static_cast<size_t>(rank)].per_comm)
    comms += l.above + l.below > 0;
  size_t siblings = 0;
  for (int ci : ctx.siblings.comms_of(rank)) {
    const Lateness* l = ctx.siblings.of(ci);
    siblings += l != nullptr && l->above + l->below > 0;
  }
  return comms + (comms > 1) + siblings;
}

// Whether `rank` is late in any of its tests at a level corrected for `tests` more.
bool late_at(const Context& ctx, int64_t rank, double tests) {
  const RankLateness& rl = ctx.stats.ranks()[static_cast<size_t>(rank)];
  const double threshold = std::log(
      tests * static_cast<double>(std::max<size_t>(1, tests_of(ctx, rank))) / ctx.th.late_alpha);
  for (const auto& [ci, l] : rl.per_comm) {
    if (late_in(ctx, l, threshold)) return true;
  }
  for (int ci : ctx.siblings.comms_of(rank)) {
    if (late_in(ctx, *ctx.siblings.of(ci), threshold)) return true;
  }
  return rl.per_comm.size() > 1 && late_in(ctx, pooled_lateness(ctx, rank), threshold);
}

int priority(LateSet::Kind k) {
  switch (k) {
    case LateSet::Kind::kStage:
      return 0;
    case LateSet::Kind::kNode:
      return 1;
    case LateSet::Kind::kReplica:
      return 2;
    case LateSet::Kind::kTensorPosition:
      return 3;
    case LateSet::Kind::kComm:
      return 4;
  }
  return 5;
}

// Every set late ranks can make up.
std::vector<LateSet> candidate_sets(const Context& ctx) {
  std::vector<LateSet> out;
  for (size_t ni = 0; ni < ctx.set.nodes.size() && ctx.set.nodes.size() > 1; ++ni) {
    if (ctx.set.node_ranks[ni].size() < 2) continue;
    LateSet s;
    s.kind = LateSet::Kind::kNode;
    s.ranks = ctx.set.node_ranks[ni];
    s.node = static_cast<int>(ni);
    s.label = ctx.set.nodes[ni];
    out.push_back(std::move(s));
  }
  bool pipeline_comms = false;
  for (const CommFamily& fam : comm_families(ctx.set)) {
    pipeline_comms = pipeline_comms || fam.role == "pp";
    if (fam.comms.size() < 2) continue;
    const size_t n = fam.comms.front()->members.size();
    for (size_t pos = 0; pos < n; ++pos) {
      LateSet s;
      for (const CommInfo* c : fam.comms) s.ranks.push_back(c->members[pos]);
      std::sort(s.ranks.begin(), s.ranks.end());
      s.comm = fam.comms.front();
      s.position = static_cast<int>(pos);
      const std::string across = " (position " + std::to_string(pos) + " in each of the " +
                                 std::to_string(fam.comms.size()) + " " + std::to_string(n) +
                                 "-rank " + fam.role + " communicators)";
      if (fam.role == "dp") {
        s.kind = LateSet::Kind::kReplica;
        s.label = "data-parallel replica " + std::to_string(pos) + across;
        s.advice =
            "this replica gets more work per step than the others: balance the data across "
            "replicas (per-replica batch size or token count, length-bucketed sampling)";
      } else if (fam.role == "pp") {
        s.kind = LateSet::Kind::kStage;
        s.label = "pipeline stage " + std::to_string(pos) + across;
        s.advice = "this stage does more work than the others: move layers off it";
      } else {
        s.kind = LateSet::Kind::kTensorPosition;
        s.label = "tensor-parallel position " + std::to_string(pos) + across;
        s.advice =
            "this shard of the tensor-parallel layers does more work: check how the layers are "
            "split";
      }
      out.push_back(std::move(s));
    }
  }
  for (const auto& c : ctx.set.comms) {
    if (c.nranks >= ctx.set.world_size || c.nranks < 2) continue;
    if (std::find(c.members.begin(), c.members.end(), -1) != c.members.end()) continue;
    LateSet s;
    s.ranks = c.members;
    std::sort(s.ranks.begin(), s.ranks.end());
    s.comm = &c;
    // Without pipeline communicators, ranks that exchange send/recv with the rest
    // (and with no one inside) are a pipeline stage.
    bool p2p_out = false, p2p_in = false;
    for (const auto& p : ctx.groups.p2p()) {
      const bool a = std::binary_search(s.ranks.begin(), s.ranks.end(), p.src);
      const bool b = std::binary_search(s.ranks.begin(), s.ranks.end(), p.dst);
      p2p_out = p2p_out || a != b;
      p2p_in = p2p_in || (a && b);
    }
    if (!pipeline_comms && p2p_out && !p2p_in) {
      s.kind = LateSet::Kind::kStage;
      s.label = "a pipeline stage (the members of " + c.label + ")";
      s.advice = "this stage does more work than the others: move layers off it";
    } else {
      s.kind = LateSet::Kind::kComm;
      s.label = "the members of " + c.label;
      s.advice = "these ranks get more work than the others: check how work is partitioned";
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Communicators whose members belong to different pipeline stages (by comm index):
// their members do different work, so lateness there may be the stage's.
std::vector<bool> stage_mixing_comms(const Context& ctx, const std::vector<LateSet>& candidates) {
  std::vector<int> stage(ctx.set.ranks.size(), -1);
  int stages = 0;
  for (const LateSet& c : candidates) {
    if (c.kind != LateSet::Kind::kStage) continue;
    for (int64_t r : c.ranks) stage[static_cast<size_t>(r)] = stages;
    ++stages;
  }
  std::vector<bool> mixing(ctx.set.comms.size(), false);
  if (stages == 0) return mixing;
  for (const auto& c : ctx.set.comms) {
    std::set<int> seen;
    for (int64_t m : c.members) {
      if (m >= 0 && static_cast<size_t>(m) < stage.size())
        seen.insert(stage[static_cast<size_t>(m)]);
    }
    mixing[static_cast<size_t>(c.index)] = seen.size() > 1;
  }
  return mixing;
}

// Per communicator (by comm index): the ranks late in it at a threshold, and its members
// sorted (asked whether a rank is one of them, for communicators of any size).
struct LateByComm {
  std::vector<std::vector<int64_t>> late, members;
};
LateByComm late_by_comm(const Context& ctx, double threshold) {
  LateByComm out;
  out.late.resize(ctx.set.comms.size());
  out.members.resize(ctx.set.comms.size());
  const auto& ranks = ctx.stats.ranks();
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& [ci, l] : ranks[r].per_comm) {
      if (late_in(ctx, l, threshold))
        out.late[static_cast<size_t>(ci)].push_back(static_cast<int64_t>(r));
    }
  }
  for (const auto& c : ctx.set.comms) {
    auto& m = out.members[static_cast<size_t>(c.index)];
    m = c.members;
    std::sort(m.begin(), m.end());
  }
  return out;
}

// Whether `rank` waited, in a communicator other than `comm`, for a member late there,
// where none of the other members of `comm` took part (so they did not wait with it).
// Waiting in one communicator holds up what the rank does next on its other streams:
// with buckets in flight on a stream of their own, the gap since a bucket ended then
// measures the rank's lag, not its compute (match/own_compute.h), and the rank looks
// late against members of `comm` that never waited.  A tensor-parallel partner of a
// slow GPU looks late in its data-parallel communicator.  Its lateness there is the
// slow member's, not its own.
bool waited_apart(const Context& ctx, const LateByComm& by_comm, int64_t rank, int comm) {
  const auto& in_comm = by_comm.members[static_cast<size_t>(comm)];
  for (const auto& [ci, l] : ctx.stats.ranks()[static_cast<size_t>(rank)].per_comm) {
    if (ci == comm) continue;
    const auto& late = by_comm.late[static_cast<size_t>(ci)];
    if (late.empty() || std::find(late.begin(), late.end(), rank) != late.end()) continue;
    const auto& members = by_comm.members[static_cast<size_t>(ci)];
    const bool apart = std::none_of(members.begin(), members.end(), [&](int64_t m) {
      return m != rank && std::binary_search(in_comm.begin(), in_comm.end(), m);
    });
    if (apart) return true;
  }
  return false;
}

// Whether every test in which `rank` is late at `threshold` is explained by its waiting
// for a late member of another communicator (waited_apart), or, against sibling
// communicators, by a member late inside the compared one: the communicator is late
// because of that member.
bool late_only_by_waiting(const Context& ctx, const LateByComm& by_comm, int64_t rank,
                          double threshold) {
  const RankLateness& rl = ctx.stats.ranks()[static_cast<size_t>(rank)];
  bool any = false;
  for (const auto& [ci, l] : rl.per_comm) {
    if (!late_in(ctx, l, threshold)) continue;
    if (!waited_apart(ctx, by_comm, rank, ci)) return false;
    any = true;
  }
  for (int ci : ctx.siblings.comms_of(rank)) {
    if (!late_in(ctx, *ctx.siblings.of(ci), threshold)) continue;
    const auto& late = by_comm.late[static_cast<size_t>(ci)];
    if (!std::any_of(late.begin(), late.end(), [&](int64_t q) { return q != rank; })) return false;
    any = true;
  }
  // Pooled over its communicators: explained when what it adds up is.
  if (rl.per_comm.size() > 1 && late_in(ctx, pooled_lateness(ctx, rank), threshold)) {
    for (const auto& [ci, l] : rl.per_comm) {
      if (l.mean_excess() > 0 && !waited_apart(ctx, by_comm, rank, ci)) return false;
    }
    any = true;
  }
  return any;
}

// Judged per communicator (a heavier pipeline stage is only visible in the comms
// that mix stages and would be diluted in a rank-wide count) and over every op the
// rank shares (a small slowdown seen in each comm a little).  Bonferroni over all
// these tests keeps the job-wide false-alarm rate at late_alpha.  Sets `late.ranks`,
// and `late.alone` to those late against members of their own stage.
void persistently_late_ranks(const Context& ctx, LateRanks& out) {
  const auto& ranks = ctx.stats.ranks();
  size_t tests = 0;
  for (size_t r = 0; r < ranks.size(); ++r) tests += tests_of(ctx, static_cast<int64_t>(r));
  const double threshold =
      std::log(static_cast<double>(std::max<size_t>(1, tests)) / ctx.th.late_alpha);
  const std::vector<bool> mixing = stage_mixing_comms(ctx, out.candidates);
  // Families of sibling communicators that lie in different stages.
  std::vector<bool> family_mixing(ctx.siblings.families().size(), false);
  {
    std::vector<int> stage_of(ctx.set.ranks.size(), -1);
    int stages = 0;
    for (const LateSet& c : out.candidates) {
      if (c.kind != LateSet::Kind::kStage) continue;
      for (int64_t m : c.ranks) stage_of[static_cast<size_t>(m)] = stages;
      ++stages;
    }
    for (size_t f = 0; f < family_mixing.size(); ++f) {
      std::set<int> seen;
      for (int ci : ctx.siblings.families()[f].comms) {
        for (int64_t m : ctx.set.comms[static_cast<size_t>(ci)].members)
          seen.insert(stage_of[static_cast<size_t>(m)]);
      }
      family_mixing[f] = seen.size() > 1;
    }
  }
  const LateByComm by_comm = late_by_comm(ctx, threshold);
  std::vector<std::pair<double, int64_t>> late;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (late_only_by_waiting(ctx, by_comm, static_cast<int64_t>(r), threshold)) continue;
    Lateness within;  // over the communicators inside one stage
    size_t within_comms = 0;
    bool alone = false;
    for (const auto& [ci, l] : ranks[r].per_comm) {
      if (mixing[static_cast<size_t>(ci)]) continue;
      within.add(l);
      ++within_comms;
      alone = alone || late_in(ctx, l, threshold);
    }
    alone = alone || (within_comms > 1 && late_in(ctx, within, threshold));
    // Against sibling communicators: alone only when none of them is in another stage.
    for (int ci : ctx.siblings.comms_of(static_cast<int64_t>(r))) {
      alone = alone || (!family_mixing[static_cast<size_t>(ctx.siblings.family_of(ci))] &&
                        late_in(ctx, *ctx.siblings.of(ci), threshold));
    }
    if (alone) out.alone.push_back(static_cast<int64_t>(r));
    double strength = 0;
    bool is_late = false;
    for (const auto& [ci, l] : ranks[r].per_comm) {
      if (!late_in(ctx, l, threshold)) continue;
      is_late = true;
      strength = std::max(strength, l.mean_excess());
    }
    for (int ci : ctx.siblings.comms_of(static_cast<int64_t>(r))) {
      const Lateness& l = *ctx.siblings.of(ci);
      if (!late_in(ctx, l, threshold)) continue;
      is_late = true;
      strength = std::max(strength, l.mean_excess());
    }
    const Lateness pooled = pooled_lateness(ctx, static_cast<int64_t>(r));
    if (ranks[r].per_comm.size() > 1 && late_in(ctx, pooled, threshold)) {
      is_late = true;
      strength = std::max(strength, pooled.mean_excess());
    }
    if (is_late) late.emplace_back(strength, static_cast<int64_t>(r));
  }
  std::sort(late.rbegin(), late.rend());
  for (const auto& [e, r] : late) out.ranks.push_back(r);
}

std::vector<LateSet> late_sets(const Context& ctx, const std::vector<LateSet>& candidates,
                               const std::vector<int64_t>& late) {
  const std::set<int64_t> all_late(late.begin(), late.end());
  std::set<int64_t> remaining = all_late;
  size_t traced = 0;
  for (const auto& ri : ctx.set.ranks) traced += ri.has_file;
  std::vector<LateSet> out;
  std::vector<bool> taken(candidates.size(), false);
  while (remaining.size() >= 2) {
    const LateSet* best = nullptr;
    size_t best_cover = 0, best_index = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const LateSet& c = candidates[i];
      // Every rank late is no rank late: lateness is relative to the peers.
      if (taken[i] || c.ranks.size() >= traced) continue;
      size_t cover = 0;
      for (int64_t r : c.ranks) cover += remaining.count(r);
      if (cover < 2) continue;
      if (best != nullptr &&
          (cover < best_cover || (cover == best_cover && priority(c.kind) >= priority(best->kind))))
        continue;
      const double size = static_cast<double>(c.ranks.size());
      bool complete = true;
      for (int64_t r : c.ranks) {
        complete = complete && (all_late.count(r) != 0 || late_at(ctx, r, size));
      }
      if (!complete) continue;
      best = &c;
      best_cover = cover;
      best_index = i;
    }
    if (best == nullptr) break;
    taken[best_index] = true;
    out.push_back(*best);
    for (int64_t r : best->ranks) remaining.erase(r);
  }
  // Every node late together is no node late either.
  const size_t nodes = static_cast<size_t>(
      std::count_if(out.begin(), out.end(), [](const LateSet& s) { return s.node >= 0; }));
  if (nodes > 0 && nodes == ctx.set.nodes.size()) {
    out.erase(std::remove_if(out.begin(), out.end(), [](const LateSet& s) { return s.node >= 0; }),
              out.end());
  }
  return out;
}

}  // namespace

LateRanks find_late_ranks(const Context& ctx) {
  LateRanks late;
  late.candidates = candidate_sets(ctx);
  persistently_late_ranks(ctx, late);
  late.sets = late_sets(ctx, late.candidates, late.ranks);
  return late;
}

std::optional<LateSet> structure_of(const std::vector<LateSet>& candidates,
                                    const std::set<int64_t>& ranks) {
  const LateSet* best = nullptr;
  for (const LateSet& c : candidates) {
    if (c.kind == LateSet::Kind::kNode) continue;
    if (std::set<int64_t>(c.ranks.begin(), c.ranks.end()) != ranks) continue;
    if (best == nullptr || priority(c.kind) < priority(best->kind)) best = &c;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

Lateness pooled_lateness(const Context& ctx, int64_t rank) {
  Lateness sum;
  for (const auto& [ci, l] : ctx.stats.ranks()[static_cast<size_t>(rank)].per_comm) sum.add(l);
  return sum;
}

Lateness set_lateness(const Context& ctx, const std::vector<int64_t>& ranks) {
  Lateness pooled, siblings;
  std::set<int> counted;
  for (int64_t r : ranks) {
    pooled.add(pooled_lateness(ctx, r));
    for (int ci : ctx.siblings.comms_of(r)) {
      const auto& members = ctx.set.comms[static_cast<size_t>(ci)].members;
      const bool inside = std::all_of(members.begin(), members.end(), [&](int64_t m) {
        return std::find(ranks.begin(), ranks.end(), m) != ranks.end();
      });
      if (inside && counted.insert(ci).second) siblings.add(*ctx.siblings.of(ci));
    }
  }
  return siblings.cost_ns > pooled.cost_ns ? siblings : pooled;
}

double relative_excess(const Lateness& sum) {
  const double others = sum.mean_gap() - sum.mean_excess();
  return others > 0 ? sum.mean_excess() / others : 0;
}

std::string excess_text(const Lateness& sum) {
  const double others = sum.mean_gap() - sum.mean_excess(), rel = relative_excess(sum);
  std::string out = fmt("%.2f", sum.mean_excess() / 1e6) + " ms more";
  // Above 10x the others' compute the share says nothing (they waited just before).
  if (others > 0 && rel < 10) out += " (" + fmt("%.0f", 100 * rel) + "% longer)";
  return out;
}

double potential_cost_s(const Context& ctx, int64_t rank) {
  double most = 0;
  for (const auto& [ci, l] : ctx.stats.ranks()[static_cast<size_t>(rank)].per_comm)
    most = std::max(most, l.late_excess_ns);
  return most / 1e9;
}

}  // namespace ringside::analysis
