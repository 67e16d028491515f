#include "report/finding_timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "match/own_compute.h"

namespace ringside::analysis {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// The communicator with the most collectives that `rank` belongs to, -1 if none.
int busiest_comm_of(const Context& ctx, int64_t rank) {
  int best = -1;
  size_t best_ops = 0;
  for (const CommInfo& c : ctx.set.comms) {
    if (c.present < 2 || std::find(c.members.begin(), c.members.end(), rank) == c.members.end())
      continue;
    const size_t ops = ctx.groups.comms()[static_cast<size_t>(c.index)].groups.size();
    if (ops > best_ops) {
      best = c.index;
      best_ops = ops;
    }
  }
  return best;
}

// First seq of the kTimelineOps-op window where `ranks` arrived last most often.
uint64_t busiest_window(const CommGroups& cg, const std::vector<int64_t>& ranks) {
  const size_t n = cg.groups.size();
  if (n <= kTimelineOps) return cg.first_seq;
  auto hit = [&](size_t i) {
    return std::find(ranks.begin(), ranks.end(), cg.groups[i].last_rank) != ranks.end() ? 1 : 0;
  };
  int count = 0, best = -1;
  size_t best_start = 0;
  for (size_t i = 0; i < n; ++i) {
    count += hit(i);
    if (i >= kTimelineOps) count -= hit(i - kTimelineOps);
    if (i + 1 >= kTimelineOps && count > best) {
      best = count;
      best_start = i + 1 - kTimelineOps;
    }
  }
  return cg.first_seq + best_start;
}

FindingTimeline plan(const Context& ctx, const Finding& f, size_t index) {
  FindingTimeline t;
  t.finding = index;
  const CommInfo* c = f.comm ? ctx.set.comm(*f.comm) : nullptr;
  t.comm = c ? c->index : busiest_comm_of(ctx, f.ranks.front());
  if (t.comm < 0) return t;
  const CommInfo& comm = ctx.set.comms[static_cast<size_t>(t.comm)];
  const CommGroups& cg = ctx.groups.comms()[static_cast<size_t>(t.comm)];
  uint64_t first = 0;
  if (c && f.seq) {
    t.stuck = *f.seq;
    first = std::max(cg.first_seq, *f.seq + 1 > kTimelineOps ? *f.seq + 1 - kTimelineOps : 0);
  } else {
    first = busiest_window(cg, f.ranks);
  }
  // Up to the op it stopped at, or as far as the communicator went.
  const uint64_t end = t.stuck ? *t.stuck + 1 : std::min(first + kTimelineOps, cg.end_seq());
  // The finding's ranks, leaving a quarter of the lanes to others to compare with.
  for (int64_t r : f.ranks) {
    if (t.lanes.size() < kTimelineLanes * 3 / 4 &&
        std::find(comm.members.begin(), comm.members.end(), r) != comm.members.end())
      t.lanes.push_back(r);
  }
  for (int64_t r : comm.members) {
    if (t.lanes.size() >= kTimelineLanes) break;
    if (r >= 0 && std::find(t.lanes.begin(), t.lanes.end(), r) == t.lanes.end())
      t.lanes.push_back(r);
  }
  for (uint64_t s = first; s < end; ++s) {
    TimelineOp op;
    op.seq = s;
    if (const GroupAgg* g = ctx.groups.group(t.comm, s)) {
      op.op = g->op;
      op.bytes = g->bytes;
      op.last_rank = g->last_rank;
    }
    op.arrival_s.assign(t.lanes.size(), kNone);
    op.end_s.assign(t.lanes.size(), kNone);
    t.ops.push_back(std::move(op));
  }
  return t;
}

}  // namespace

std::vector<FindingTimeline> finding_timelines(const Context& ctx,
                                               const std::vector<Finding>& findings, size_t batch) {
  std::vector<FindingTimeline> out;
  for (size_t i = 0; i < findings.size() && out.size() < kMaxTimelines; ++i) {
    // A rank without a trace has no ops to draw.
    if (findings[i].ranks.empty() || findings[i].kind == "missing_trace") continue;
    FindingTimeline t = plan(ctx, findings[i], i);
    if (t.comm >= 0 && !t.ops.empty()) out.push_back(std::move(t));
  }
  // rank -> (timeline, lane) to fill, so that each file is read once.
  std::map<int64_t, std::vector<std::pair<size_t, size_t>>> wanted;
  for (size_t ti = 0; ti < out.size(); ++ti) {
    for (size_t li = 0; li < out[ti].lanes.size(); ++li)
      wanted[out[ti].lanes[li]].emplace_back(ti, li);
  }
  for (const auto& [rank, slots] : wanted) {
    if (rank < 0 || static_cast<size_t>(rank) >= ctx.set.ranks.size()) continue;
    const RankInfo& ri = ctx.set.ranks[static_cast<size_t>(rank)];
    if (!ri.has_file || !ri.read_error.empty()) continue;
    auto note = [&](const trace::OpRecord& op) {
      if (trace::is_p2p(static_cast<trace::OpKind>(op.op))) return;
      for (const auto& [ti, li] : slots) {
        FindingTimeline& t = out[ti];
        if (op.comm_id != ctx.set.comms[static_cast<size_t>(t.comm)].id) continue;
        if (op.seq < t.ops.front().seq || op.seq > t.ops.back().seq) continue;
        TimelineOp& o = t.ops[op.seq - t.ops.front().seq];
        if (!std::isnan(o.arrival_s[li])) continue;  // /ops before /pending
        const OpTimes times = op_times(ri, op);
        if (times.arrival != kNever)
          o.arrival_s[li] = (static_cast<double>(times.arrival) - ctx.job_start_ns) / 1e9;
        if (times.end != kNever)
          o.end_s[li] = (static_cast<double>(times.end) - ctx.job_start_ns) / 1e9;
        if (o.op == 0 && o.bytes == 0) {
          o.op = op.op;
          o.bytes = op.bytes;
        }
      }
    };
    auto reader = trace::TraceReader::open(ri.path);
    if (!reader.ok()) continue;
    // A file that cannot be read now only leaves its lanes short.
    (void)reader.value()->for_each_op_batch(
        batch,
        [&](std::span<const trace::OpRecord> ops) {
          for (const auto& op : ops) note(op);
          return true;
        },
        ri.first_row);
    for (const auto& op : ri.pending) note(op);
  }
  return out;
}

}  // namespace ringside::analysis
