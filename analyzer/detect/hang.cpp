// Hangs, post-mortem: per communicator, the first op some members entered
// and that never completed on all of them, with the time they have waited by
// the end of their traces.  Who is missing decides the kind:
//   missing_rank  a member never entered (alive, or no trace to tell)
//   dead_rank     a member never entered and its trace ends early with no shutdown
//   gpu_stall     all entered, a member's device never started the op
//   all_stuck     all entered and started, none completed
#include <algorithm>
#include <cstdio>
#include <set>

#include "detect/context.h"
#include "report/format.h"
#include "report/next_command.h"

namespace ringside::analysis {
namespace {

std::string list_ranks(const std::vector<int64_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  if (r.size() > 8) s += ", ... (" + std::to_string(r.size()) + " ranks)";
  return s;
}

// The rank's trace ended well before the others' and without a clean shutdown.
bool is_dead(const Context& ctx, int64_t rank, int64_t latest_other) {
  const RankInfo& ri = ctx.set.ranks[static_cast<size_t>(rank)];
  if (!ri.has_file || ri.shutdown) return false;
  return ctx.last_seen_ns(rank) + static_cast<int64_t>(ctx.th.dead_gap_s * 1e9) < latest_other;
}

}  // namespace

void detect_hangs(const Context& ctx, std::vector<Finding>& out) {
  const TraceSet& set = ctx.set;
  int64_t latest = kNever;
  for (const auto& ri : set.ranks)
    if (ri.has_file) latest = std::max(latest, ctx.last_seen_ns(ri.rank));
  std::set<int64_t> reported_dead;

  for (const auto& c : set.comms) {
    const auto& groups = ctx.groups.comms()[static_cast<size_t>(c.index)].groups;
    for (size_t seq = 0; seq < groups.size(); ++seq) {
      const GroupAgg& g = groups[seq];
      if (g.entered == 0) continue;
      // Done when every member with a trace finished it (members without a
      // trace cannot be judged op by op).
      if (g.completed == g.entered && g.entered >= c.present) continue;
      if (g.mismatch) break;  // a desync: reported by the desync detector
      // How long the members that entered have been waiting at the end of their traces.
      std::vector<int64_t> entered, absent;
      int64_t waited = 0;
      for (int64_t m : c.members) {
        if (m < 0) continue;
        const RankCommProgress* p = ctx.groups.progress()[static_cast<size_t>(m)].find(c.index);
        if (p != nullptr && p->max_seq_entered >= static_cast<int64_t>(seq)) {
          entered.push_back(m);
          waited = std::max(waited, ctx.last_seen_ns(m) - g.min_arrival);
        } else {
          absent.push_back(m);
        }
      }
      for (int i = static_cast<int>(c.members.size()); i < c.nranks; ++i) absent.push_back(-1);
      const double waited_s = static_cast<double>(waited) / 1e9;
      if (waited_s < ctx.th.hang_min_wait_s) break;  // in flight when the trace was written

      Finding f;
      f.kind = "hang";
      f.comm = c.id;
      f.comm_label = c.label;
      f.seq = seq;
      f.severity = 1.0;
      f.cost_s = waited_s;
      const std::string opname = trace::op_kind_name(static_cast<trace::OpKind>(g.op));
      const std::string where = opname + " #" + std::to_string(seq) + " on " + c.label + " (" +
                                std::to_string(c.nranks) + " ranks)";
      if (!absent.empty()) {
        std::vector<int64_t> dead, missing_file, alive;
        for (int64_t a : absent) {
          if (a < 0 || !set.ranks[static_cast<size_t>(a)].has_file)
            missing_file.push_back(a);
          else if (is_dead(ctx, a, latest))
            dead.push_back(a);
          else
            alive.push_back(a);
        }
        if (!dead.empty()) {
          f.subkind = "dead_rank";
          f.ranks = dead;
          for (int64_t d : dead) reported_dead.insert(d);
          const int64_t ended = latest - ctx.last_seen_ns(dead.front());
          f.evidence = "Rank " + list_ranks(dead) + " never entered " + where + " and " +
                       (dead.size() == 1 ? "its trace ends " : "their traces end ") +
                       fmt("%.0f", ended / 1e9) +
                       " s before the others' with no shutdown record (crashed or killed); " +
                       std::to_string(entered.size()) + " ranks waited in it for " +
                       fmt("%.0f", waited_s) + " s.";
          f.confidence = 0.9;
        } else {
          f.subkind = "missing_rank";
          f.ranks = alive.empty() ? missing_file : alive;
          f.ranks.erase(std::remove(f.ranks.begin(), f.ranks.end(), -1), f.ranks.end());
          f.evidence =
              "Rank " + list_ranks(f.ranks) + " never entered " + where + " while " +
              std::to_string(entered.size()) + " ranks have waited in it for " +
              fmt("%.0f", waited_s) + " s; " +
              (alive.empty()
                   ? std::string("there is no trace for it, so whether it died is unknown.")
                   : std::string("its trace continues (the process was alive): it is stuck "
                                 "before this call, in its own code or another communicator."));
          f.confidence = alive.empty() ? 0.7 : 0.9;
        }
      } else {
        std::vector<int64_t> stalled;
        for (int64_t m : c.members) {
          for (const auto& op : set.ranks[static_cast<size_t>(m)].pending) {
            if (op.comm_id == c.id && op.seq == seq && op.t_dev_start_ns == trace::kUnknownTime &&
                op.status == static_cast<uint8_t>(trace::OpStatus::kDevicePending)) {
              stalled.push_back(m);
            }
          }
        }
        if (g.not_started > 0 && static_cast<int>(stalled.size()) < c.nranks) {
          f.subkind = "gpu_stall";
          f.ranks = stalled;
          f.evidence = "All " + std::to_string(c.nranks) + " ranks entered " + where +
                       ", but on rank " + list_ranks(stalled) +
                       " the GPU never started it (enqueued on the host, no device start after " +
                       fmt("%.0f", waited_s) +
                       " s) while the others' kernels wait for it: a stalled GPU or stream.";
          f.confidence = 0.85;
        } else {
          f.subkind = "all_stuck";
          f.ranks = entered;
          f.evidence = "All " + std::to_string(c.nranks) + " ranks entered " + where +
                       " and none completed it in " + fmt("%.0f", waited_s) +
                       " s: the collective itself is stuck (network, NCCL or driver), not a "
                       "missing rank.";
          f.confidence = 0.85;
        }
      }
      f.nodes = f.subkind == "all_stuck" ? std::vector<std::string>{} : ctx.nodes_of(f.ranks);
      if (f.subkind == "all_stuck") {
        for (int ni : c.nodes) f.nodes.push_back(set.nodes[static_cast<size_t>(ni)]);
      }
      f.extra["waited_s"] = waited_s;
      f.extra["entered"] = entered.size();
      f.extra["op"] = opname;
      f.next_command = next_command_for_hang(ctx, f);
      out.push_back(std::move(f));
      break;  // later ops of this comm are consequences
    }
  }
  // Ranks whose traces stop early even where no one waited on them yet.
  for (const auto& ri : set.ranks) {
    if (!ri.has_file || reported_dead.count(ri.rank) || !is_dead(ctx, ri.rank, latest)) continue;
    bool in_hang = false;
    for (const auto& f : out)
      in_hang = in_hang || std::find(f.ranks.begin(), f.ranks.end(), ri.rank) != f.ranks.end();
    if (in_hang) continue;
    Finding f;
    f.kind = "hang";
    f.subkind = "dead_rank";
    f.ranks = {ri.rank};
    f.nodes = {ri.node};
    f.severity = 0.9;
    f.confidence = 0.7;
    f.evidence = "The trace of " + ctx.describe_rank(ri.rank) + " ends " +
                 fmt("%.0f", static_cast<double>(latest - ctx.last_seen_ns(ri.rank)) / 1e9) +
                 " s before the others' with no shutdown record: the process died or was killed.";
    f.next_command = next_command_for_hang(ctx, f);
    out.push_back(std::move(f));
  }
}

}  // namespace ringside::analysis
