#include "match/own_compute.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace ringside::analysis {
namespace {

using trace::OpRecord;

}  // namespace

OpTimes op_times(const RankInfo& rank, const OpRecord& op) {
  OpTimes t;
  if (op.t_dev_start_ns != trace::kUnknownTime) {
    t.arrival = rank.to_job(op.t_dev_start_ns);
  } else {
    t.arrival = rank.to_job(op.t_enter_ns);
    // Device timing was on for this op but the device never reached it.
    t.device_started = !(op.flags & trace::kFlagDeviceTimed) ||
                       op.status == static_cast<uint8_t>(trace::OpStatus::kComplete);
    if (op.status == static_cast<uint8_t>(trace::OpStatus::kDevicePending))
      t.device_started = false;
  }
  if (op.status == static_cast<uint8_t>(trace::OpStatus::kComplete)) {
    if (op.t_dev_end_ns != trace::kUnknownTime) {
      t.end = rank.to_job(op.t_dev_end_ns);
    } else if (op.t_exit_ns != trace::kUnknownTime) {
      t.end = rank.to_job(op.t_exit_ns);
    }
  }
  if (t.arrival == trace::kUnknownTime) t.arrival = kNever;
  return t;
}

OwnTimeline::OwnTimeline(std::vector<Interval> ops) {
  // The union does not depend on the order of intervals that begin together, so
  // intervals given in order of their beginning (OwnCompute's) are not sorted again.
  auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
  if (!std::is_sorted(ops.begin(), ops.end(), by_begin))
    std::sort(ops.begin(), ops.end(), by_begin);
  std::vector<uint64_t> streams;
  for (const auto& o : ops) {
    if (std::find(streams.begin(), streams.end(), o.stream) == streams.end())
      streams.push_back(o.stream);
  }
  // One union per stream of the intervals on the others, and one of them all for
  // streams that hold none.
  for (size_t k = 0; k <= streams.size(); ++k) {
    const bool everything = k == streams.size();
    Merged m;
    m.stream = everything ? 0 : streams[k];
    int64_t covered = 0;
    for (const auto& o : ops) {
      if ((!everything && o.stream == m.stream) || o.end <= o.begin) continue;
      if (!m.end.empty() && o.begin <= m.end.back()) {
        if (o.end > m.end.back()) {
          covered += o.end - m.end.back();
          m.end.back() = o.end;
        }
        continue;
      }
      m.before.push_back(covered);
      m.begin.push_back(o.begin);
      m.end.push_back(o.end);
      covered += o.end - o.begin;
    }
    (everything ? all_ : by_stream_.emplace_back()) = std::move(m);
  }
}

size_t OwnTimeline::begun_by(const Merged& m, int64_t t, size_t& hint) {
  // A few steps on or back from the hint, else a binary search.
  constexpr size_t kSteps = 8;
  const std::vector<int64_t>& b = m.begin;
  size_t at = std::min(hint, b.size());
  if (at == 0 || b[at - 1] <= t) {
    for (size_t k = 0; k < kSteps && at < b.size() && b[at] <= t; ++k) ++at;
    if (at == b.size() || b[at] > t) return hint = at;
  } else {
    for (size_t k = 0; k < kSteps && at > 0 && b[at - 1] > t; ++k) --at;
    if (at == 0 || b[at - 1] <= t) return hint = at;
  }
  return hint = static_cast<size_t>(std::upper_bound(b.begin(), b.end(), t) - b.begin());
}

int64_t OwnTimeline::covered(const Merged& m, int64_t from, int64_t to) {
  if (to <= from) return 0;
  // Covered time up to t: intervals are disjoint and sorted.
  auto covered_to = [&](int64_t t, size_t& hint) -> int64_t {
    const size_t begun = begun_by(m, t, hint);
    if (begun == 0) return 0;
    const size_t i = begun - 1;
    return m.before[i] + std::min(t, m.end[i]) - m.begin[i];
  };
  return covered_to(to, m.to_hint) - covered_to(from, m.from_hint);
}

int64_t OwnTimeline::other_busy(uint64_t stream, int64_t from, int64_t to) const {
  const Merged* m = &all_;
  for (const Merged& s : by_stream_) {
    if (s.stream == stream) m = &s;
  }
  return covered(*m, from, to);
}

int64_t OwnTimeline::busy(int64_t from, int64_t to) const {
  return covered(all_, from, to);
}

OwnCompute::OwnCompute(const RankInfo& rank, std::span<const OpRecord> ops,
                       const KnownAlongside& known, const KnownLastEnd& last_end) {
  const size_t n = ops.size();
  std::vector<OpTimes> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = op_times(rank, ops[i]);
  order_.resize(n);
  for (size_t i = 0; i < n; ++i) order_[i] = static_cast<uint32_t>(i);
  auto earlier = [&](uint32_t a, uint32_t b) {
    const int64_t x = t[a].arrival == kNever ? INT64_MAX : t[a].arrival;
    const int64_t y = t[b].arrival == kNever ? INT64_MAX : t[b].arrival;
    return x < y;
  };
  // A rank's rows are mostly in order of arrival already.
  if (!std::is_sorted(order_.begin(), order_.end(), earlier))
    std::stable_sort(order_.begin(), order_.end(), earlier);
  // Default-initialized: not filled (kHasReadings tells the ops that have readings).
  first_reading_.reset(new int64_t[n]);
  other_at_.reset(new uint32_t[n]);
  flags_.assign(n, 0);

  // Ops during which the rank started an op on another stream did not hold it up.
  // An op that started the moment its stream freed was issued earlier: it shows
  // nothing of what the rank did meanwhile.
  std::vector<uint32_t> in_flight;                     // complete ops whose end is still ahead
  std::vector<std::pair<uint64_t, int64_t>> freed_at;  // stream -> end of its latest op
  for (uint32_t i : order_) {
    const OpTimes& x = t[i];
    if (x.arrival == kNever) break;
    std::erase_if(in_flight, [&](uint32_t j) { return t[j].end <= x.arrival; });
    auto freed = std::find_if(freed_at.begin(), freed_at.end(),
                              [&](const auto& s) { return s.first == ops[i].stream; });
    if (freed == freed_at.end()) freed = freed_at.insert(freed_at.end(), {ops[i].stream, kNever});
    const bool issued_earlier =
        freed->second != kNever && x.arrival - freed->second < kBackToBackNs;
    freed->second = x.end;
    for (uint32_t j : in_flight) {
      if (!issued_earlier && ops[j].stream != ops[i].stream &&
          x.arrival - t[j].arrival >= kBackToBackNs && t[j].end - x.arrival >= kBackToBackNs) {
        flags_[j] |= kStartedAnother | kAlongside | kSeen;
      }
    }
    if (x.end != kNever) in_flight.push_back(i);
  }
  // The timelines' intervals in order of arrival: each timeline need not sort them.  The
  // held and never-alongside timelines keep a subsequence of `every`: one that keeps all of
  // it (mostly, in a job whose ops hold its ranks up) is the same timeline, built once, so
  // each interval notes which of them leave it out and a subsequence is copied only when
  // one does.
  constexpr uint8_t kNotHeld = 1, kMayRunAlongside = 2;
  std::vector<OwnTimeline::Interval> every;
  std::vector<uint8_t> left_out;  // per interval of `every`
  size_t not_held = 0, may_run_alongside = 0;
  std::vector<int64_t> arrivals;  // ascending
  every.reserve(n);
  left_out.reserve(n);
  arrivals.reserve(n);
  for (uint32_t i : order_) {
    const Alongside k = known ? known(ops[i]) : Alongside::kHeld;
    if (k != Alongside::kHeld) flags_[i] |= kAlongside;
    if (k == Alongside::kSeen) flags_[i] |= kSeen;
    if (t[i].arrival != kNever) arrivals.push_back(t[i].arrival);
    if (t[i].arrival == kNever || t[i].end == kNever || t[i].end <= t[i].arrival) continue;
    every.push_back({t[i].arrival, t[i].end, ops[i].stream});
    uint8_t out = (flags_[i] & kSeen) != 0 ? kNotHeld : 0;
    // Send/recv is never measured (GroupTable::ran_alongside): it may have run alongside.
    if (k != Alongside::kHeld || trace::is_p2p(static_cast<trace::OpKind>(ops[i].op)))
      out |= kMayRunAlongside;
    left_out.push_back(out);
    not_held += (out & kNotHeld) != 0;
    may_run_alongside += (out & kMayRunAlongside) != 0;
  }
  auto kept = [&](uint8_t leaves_out, size_t count) {
    std::vector<OwnTimeline::Interval> v;
    v.reserve(every.size() - count);
    for (size_t j = 0; j < every.size(); ++j) {
      if ((left_out[j] & leaves_out) == 0) v.push_back(every[j]);
    }
    return v;
  };
  std::optional<OwnTimeline> held_only, never_only;
  if (not_held > 0) held_only.emplace(kept(kNotHeld, not_held));
  if (may_run_alongside > 0) never_only.emplace(kept(kMayRunAlongside, may_run_alongside));
  const OwnTimeline all(std::move(every));
  const OwnTimeline& timeline = held_only ? *held_only : all;
  const OwnTimeline& never = never_only ? *never_only : all;
  // Ops that arrived in (from, to), beyond back-to-back distance of both ends, where
  // `to` is arrivals[at]: every arrival before it comes before `at`.  The one that
  // decides is the latest before `to`, mostly a few places back from `at` (past the
  // ops issued together with it): looked for there first, else by binary search.
  auto started_between = [&](int64_t from, int64_t to, size_t at) {
    from += kBackToBackNs;
    to -= kBackToBackNs;
    if (to <= from) return false;
    for (size_t k = at; k > 0 && at - k < 16; --k) {
      if (arrivals[k - 1] <= from) return false;
      if (arrivals[k - 1] < to) return true;
    }
    const auto it = std::upper_bound(arrivals.begin(), arrivals.end(), from);
    return it != arrivals.end() && *it < to;
  };
  std::vector<std::pair<uint64_t, uint32_t>> last_on;  // stream -> latest op
  std::vector<uint8_t> waited_for_stream(n, 0);        // started back to back after the one before
  size_t at = 0;                                       // of ops[i] in arrivals
  // The latest end, before the op at hand arrives, of a collective that held the rank up
  // (kNever: none yet), and the ends of those still ahead.
  int64_t held_end = kNever;
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> held_ahead;
  for (uint32_t i : order_) {
    const OpTimes& x = t[i];
    if (x.arrival == kNever) break;
    const size_t here = at++;
    while (!held_ahead.empty() && held_ahead.top() <= x.arrival) {
      held_end = std::max(held_end, held_ahead.top());
      held_ahead.pop();
    }
    const bool p2p = trace::is_p2p(static_cast<trace::OpKind>(ops[i].op));
    if (!p2p && (flags_[i] & kAlongside) == 0 && x.end != kNever) held_ahead.push(x.end);
    const uint64_t stream = ops[i].stream;
    if (x.end != kNever && all.other_busy(stream, x.arrival, x.end) > 0) flags_[i] |= kContended;
    auto prev = std::find_if(last_on.begin(), last_on.end(),
                             [&](const auto& s) { return s.first == stream; });
    if (prev == last_on.end()) {
      last_on.emplace_back(stream, i);
      continue;
    }
    const uint32_t pi = prev->second;
    const OpTimes& p = t[pi];
    prev->second = i;
    if (p.end == kNever || x.arrival < p.end) continue;
    waited_for_stream[i] = x.arrival - p.end < kBackToBackNs;
    // A gap in which the rank made a communicator holds its set-up, not compute.
    if (rank.made_comm_in(p.end, x.arrival)) continue;
    // After an op that ran alongside, an op that started when its stream freed says
    // only that the compute before it ended earlier.  Where that compute began is
    // unknown after an op that may or may not have held the rank up, and after one
    // that ran alongside but itself started when its stream freed.
    if ((flags_[pi] & kAlongside) != 0 &&
        ((flags_[pi] & kSeen) == 0 || waited_for_stream[pi] != 0 || waited_for_stream[i] != 0)) {
      continue;
    }
    if (started_between(p.end, x.arrival, here)) flags_[i] |= kSplit;
    ComputeReadings r;
    const int64_t gap = x.arrival - p.end;
    if (ops[i].t_enter_ns != trace::kUnknownTime && gap > 0 &&
        2 * (rank.to_job(ops[i].t_enter_ns) - p.end) > gap)
      flags_[i] |= kIssuedLate;
    const int64_t every_held = gap - all.other_busy(stream, p.end, x.arrival);
    r[1] = never_only ? gap - never.other_busy(stream, p.end, x.arrival) : every_held;
    r[0] = held_only ? gap - timeline.other_busy(stream, p.end, x.arrival) : every_held;
    // Held until the previous op ended on every member, when the rank arrived after that.
    const int64_t all_ended = last_end ? last_end(ops[pi]) : kNever;
    r[2] = all_ended > p.end && all_ended <= x.arrival
               ? x.arrival - all_ended - all.other_busy(stream, all_ended, x.arrival)
               : every_held;
    r[3] = (flags_[pi] & kSeen) != 0
               ? x.arrival - p.arrival - timeline.other_busy(stream, p.arrival, x.arrival)
               : r[0];
    // Started back to back after the op before on its stream (the host issued both ahead
    // of the GPU, as gradient all-reduces after a pipeline's backward pass): what it
    // waited for is the rank's compute since it last left a collective that held it up,
    // outside every op (time inside send/recv waited for peers).  A collective ends
    // together on its members, so they are measured from the same moment.
    if (!p2p && *std::max_element(r.begin(), r.end()) < kBackToBackNs && held_end != kNever &&
        held_end <= p.end) {
      const int64_t since = x.arrival - held_end - all.busy(held_end, x.arrival);
      if (since >= kBackToBackNs) {
        r.fill(since);
        flags_[i] |= kSplit | kSinceHeld;
      }
    }
    first_reading_[i] = r[0];
    flags_[i] |= kHasReadings;
    if (readings_differ(r)) {
      other_at_[i] = static_cast<uint32_t>(other_readings_.size());
      std::copy(r.begin() + 1, r.end(), other_readings_.emplace_back().begin());
      flags_[i] |= kReadingsDiffer;
    }
  }
}

}  // namespace ringside::analysis
