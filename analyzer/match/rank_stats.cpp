#include "match/rank_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <utility>

namespace ringside::analysis {
namespace {
constexpr size_t kMaxMismatchDetails = 16;
}

void Lateness::add(const Lateness& o) {
  groups += o.groups;
  last += o.last;
  excess_positive += o.excess_positive;
  excess_sum += o.excess_sum;
  excess_sq_sum += o.excess_sq_sum;
  gap_sum += o.gap_sum;
  cost_ns += o.cost_ns;
  host_cost_ns += o.host_cost_ns;
  wait_ns += o.wait_ns;
  above += o.above;
  below += o.below;
  late_excess_ns += o.late_excess_ns;
}

double Lateness::late_evidence() const {
  if (above <= below) return 0;
  // Uniform prior on p: integral of p^a (1-p)^b dp = a! b! / (a+b+1)!, over 2^-(a+b).
  const double a = static_cast<double>(above), b = static_cast<double>(below);
  return (a + b) * std::log(2.0) + std::lgamma(a + 1) + std::lgamma(b + 1) - std::lgamma(a + b + 2);
}

double Lateness::t_stat() const {
  if (groups < 3) return 0;
  const double n = static_cast<double>(groups);
  const double mean = excess_sum / n;
  const double var = std::max(0.0, excess_sq_sum / n - mean * mean) * n / (n - 1);
  if (var <= 0) return mean > 0 ? 1e9 : 0;
  return mean / std::sqrt(var / n);
}

Lateness& RankLateness::comm(int c) {
  for (auto& [ci, l] : per_comm) {
    if (ci == c) return l;
  }
  per_comm.emplace_back(c, Lateness{});
  return per_comm.back().second;
}

RankStatsPass::RankStatsPass(const GroupTable& table, double late_margin, bool sample_arrivals)
    : table_(table), late_margin_(late_margin), sample_arrivals_(sample_arrivals) {
  ranks_.resize(table.set().ranks.size());
  for (const auto& [c, seq] : table.mismatches()) {
    if (mismatch_details_.size() >= kMaxMismatchDetails) break;
    mismatch_details_.push_back({c, seq, {}});
  }
}

Status RankStatsPass::add_rank(const RankInfo& rank, std::span<const trace::OpRecord> all,
                               HeldOwnCompute* held) {
  const TraceSet& set = table_.set();
  RankLateness& rl = ranks_[static_cast<size_t>(rank.rank)];
  int64_t prev_end = kNever;       // of any op: time outside every op is the rank's own
  int64_t prev_held_end = kNever;  // of ops that held the rank up
  RankComms comms(set, rank.rank);
  auto visit = [&](const trace::OpRecord& op, const std::optional<ComputeReadings>& before,
                   bool alongside, bool issued_late) {
    const int ci = comms.of(op.comm_id).index;
    if (ci < 0) return;
    const OpTimes t = op_times(rank, op);
    if (t.arrival == kNever) return;
    const bool p2p = trace::is_p2p(static_cast<trace::OpKind>(op.op));
    if (prev_end != kNever && t.arrival > prev_end && !rank.made_comm_in(prev_end, t.arrival))
      rl.compute_ns += static_cast<double>(t.arrival - prev_end);
    if (t.end != kNever) {
      rl.inside_ns +=
          static_cast<double>(std::max<int64_t>(0, t.end - std::max(t.arrival, prev_end)));
      prev_end = std::max(prev_end, t.end);
    }
    if (!alongside) {
      if (prev_held_end != kNever && t.arrival > prev_held_end &&
          !rank.made_comm_in(prev_held_end, t.arrival))
        rl.compute_held_ns += static_cast<double>(t.arrival - prev_held_end);
      if (t.end != kNever) prev_held_end = std::max(prev_held_end, t.end);
    }
    if (p2p) return;
    for (auto& md : mismatch_details_) {
      if (md.comm == ci && md.seq == op.seq) {
        md.calls.push_back({rank.rank, op.op, op.dtype, op.count, op.peer});
      }
    }
    const CommInfo& comm = set.comms[static_cast<size_t>(ci)];
    const GroupAgg* g = table_.group(ci, op.seq);
    const CommGroups& cg = table_.comms()[static_cast<size_t>(ci)];
    if (g == nullptr || comm.present < 2 || !g->complete(comm.present) || g->mismatch) return;
    if (sample_arrivals_) {
      bounded_push(rl.arrival_late_ms, static_cast<float>((t.arrival - g->min_arrival) / 1e6),
                   rl.arrivals_seen);
    }
    ++rl.arrivals_seen;
    if (!before || g->gaps < comm.present) return;
    // Own compute before the op against the other members' mean, per reading
    // (match/own_compute.h).  The op counts against the rank only when it is late
    // under every reading; its excess is the smallest one.
    // Where the op's readings are one for every member (most ops: one stream's ops around
    // them), every reading gives the same: reading 0 alone is measured.
    const bool one_reading = g->other_readings < 0 && !readings_differ(*before);
    const double gap = static_cast<double>((*before)[0]);
    const double others = (static_cast<double>(g->gap.sum) - gap) / (g->gaps - 1);
    double excess = gap - others;
    bool late = excess > late_margin_ * others;
    for (int k = 1; k < (one_reading ? 1 : kReadings); ++k) {
      const double gap_k = static_cast<double>((*before)[k]);
      const double others_k = (static_cast<double>(cg.reading(*g, k).sum) - gap_k) / (g->gaps - 1);
      const double e = gap_k - others_k;
      excess = std::min(excess, e);
      late = late && e > late_margin_ * others_k;
    }
    Lateness& l = rl.comm(ci);
    ++l.groups;
    l.gap_sum += gap;
    l.excess_sum += excess;
    l.excess_sq_sum += excess * excess;
    if (excess > 0) ++l.excess_positive;
    if (std::max(gap, others) >= kMinInformativeGapNs) {
      if (late) {
        ++l.above;
        l.late_excess_ns += excess;
      } else {
        ++l.below;
      }
    }
    l.wait_ns += static_cast<double>(g->max_arrival - t.arrival);
    if (g->last_rank == rank.rank) {
      ++l.last;
      const double margin =
          static_cast<double>(g->max_arrival - std::max(g->second_arrival, g->min_arrival));
      // Others waited `margin` for us; our own excess is what we added to it.
      const double cost = std::clamp(excess, 0.0, margin);
      l.cost_ns += cost;
      if (issued_late) l.host_cost_ns += cost;
    }
  };
  records_ += all.size();
  HeldOwnCompute measured;
  const OwnCompute& own = table_.own_compute(rank, all, held != nullptr ? *held : measured);
  for (uint32_t i : own.order())
    visit(all[i], own.before(i), own.ran_alongside(i), own.issued_late(i));
  for (const auto& op : rank.pending) {
    auto it = set.comm_index.find(op.comm_id);
    if (it == set.comm_index.end()) continue;
    for (auto& md : mismatch_details_) {
      if (md.comm == it->second && md.seq == op.seq) {
        bool seen = false;
        for (const auto& c : md.calls) seen = seen || c.rank == rank.rank;
        if (!seen) md.calls.push_back({rank.rank, op.op, op.dtype, op.count, op.peer});
      }
    }
  }
  rl.total = {};
  for (const auto& [c, l] : rl.per_comm) rl.total.add(l);
  return {};
}

namespace {
// The expected distance, in sigmas, from the mean of n normal values bar the largest (of
// all n with two) down to the smallest: expected_max_normal(n) from the mean of all n,
// less what leaving the largest out lowers it by.
double lower_tail_in_sigmas(int n) {
  const double e = expected_max_normal(n);
  return n >= 3 ? e * (n - 2) / (n - 1) : e;
}

// The members' gaps before one op in one reading: mean and sample deviation (n - 1, so
// that groups of any size measure the same spread: with two members the population one
// is 1/sqrt(2) of it), or for the lower tail the mean's distance above the fastest in
// sigmas.  Over one stretch: the reading in which they are the least spread.  Bar the
// primary spread, with three members or more, of all but the slowest.
struct GapSpread {
  double mean = 0, sd = 0;
  int reading = -1;  // -1: no reading with a positive mean
};
GapSpread gap_spread(const CommGroups& cg, const GroupAgg& g, RankStatsPass::SpreadOver over) {
  GapSpread best;
  const bool one = over == RankStatsPass::SpreadOver::kLowerTail;
  if ((one && g.split > 0) || g.since_held) return best;
  const bool drop_slowest = over != RankStatsPass::SpreadOver::kPrimary && g.gaps >= 3;
  const double n = g.gaps - (drop_slowest ? 1 : 0);
  const int readings = one ? kReadings : 1;
  const double tail_sigmas = one ? lower_tail_in_sigmas(g.gaps) : 0;
  for (int k = 0; k < readings; ++k) {
    // Over one stretch, not where a member started the op the moment its stream freed
    // (spread() below).
    const GapStats& r = cg.reading(g, k);
    if (r.sum <= 0 || (one && r.min < kBackToBackNs)) continue;
    const auto max = static_cast<double>(r.max);
    const double sum = static_cast<double>(r.sum) - (drop_slowest ? max : 0);
    const double sq = static_cast<double>(r.sq_sum) - (drop_slowest ? max * max : 0);
    const double mean = sum / n;
    if (mean <= 0) continue;
    const double sd = one ? (mean - static_cast<double>(r.min)) / tail_sigmas
                          : std::sqrt(std::max(0.0, (sq - n * mean * mean) / (n - 1)));
    if (best.reading < 0 || sd < best.sd) best = {mean, sd, k};
  }
  return best;
}

// The gap spread of (a sample of, at most about 2000) a communicator's ops with two or
// more members' gaps, where a reading has a positive mean.
template <typename Fn>
void for_each_sampled_spread(const CommGroups& cg, RankStatsPass::SpreadOver over, Fn&& fn) {
  const auto& groups = cg.groups;
  for (size_t s = 0; s < groups.size(); s += std::max<size_t>(1, groups.size() / 2000)) {
    const GroupAgg& g = groups[s];
    if (g.gaps < 2) continue;
    const GapSpread sp = gap_spread(cg, g, over);
    if (sp.reading >= 0) fn(sp);
  }
}

// Median over (a sample of) complete ops of every comm of a statistic of the members' gaps.
template <typename Stat>
double median_over_groups(const GroupTable& table, Stat stat,
                          RankStatsPass::SpreadOver over = RankStatsPass::SpreadOver::kPrimary) {
  std::vector<double> values;
  for (const auto& c : table.set().comms) {
    if (c.present < 2) continue;
    const CommGroups& cg = table.comms()[static_cast<size_t>(c.index)];
    for_each_sampled_spread(cg, over,
                            [&](const GapSpread& sp) { values.push_back(stat(sp.mean, sp.sd)); });
  }
  return median_of(std::move(values));
}
}  // namespace

double RankStatsPass::median_gap_cv(SpreadOver over) const {
  return median_over_groups(
      table_, [](double mean, double sd) { return sd / mean; }, over);
}

double RankStatsPass::median_gap_sd_ns() const {
  return median_over_groups(table_, [](double, double sd) { return sd; });
}

RankStatsPass::GapSpreadByComm RankStatsPass::gap_spread_by_comm(SpreadOver over) const {
  GapSpreadByComm out;
  for (const auto& c : table_.set().comms) {
    std::vector<double> cvs, sds;
    if (c.present >= 2) {
      // The ops median_over_groups takes for this communicator.
      for_each_sampled_spread(table_.comms()[static_cast<size_t>(c.index)], over,
                              [&](const GapSpread& sp) {
                                cvs.push_back(sp.sd / sp.mean);
                                sds.push_back(sp.sd);
                              });
    }
    out.cv.push_back(median_of(std::move(cvs)));
    out.sd_ns.push_back(median_of(std::move(sds)));
  }
  return out;
}

std::vector<double> RankStatsPass::gap_sd_ns_by_comm(SpreadOver over) const {
  return gap_spread_by_comm(over).sd_ns;
}

RankStatsPass::Spread RankStatsPass::spread(int comm, double min_sd_ns,
                                            double min_excess_fraction) const {
  Spread sp;
  const CommInfo& c = table_.set().comms[static_cast<size_t>(comm)];
  if (c.present < 2) return sp;
  const CommGroups& cg = table_.comms()[static_cast<size_t>(comm)];
  for (const GroupAgg& g : cg.groups) {
    if (g.gaps < c.present || g.max_arrival == kNever) continue;
    const GapSpread gs = gap_spread(cg, g, SpreadOver::kPrimary);
    if (gs.reading < 0) continue;
    const GapStats& r = cg.reading(g, gs.reading);
    // A member that started the op the moment its stream freed had finished computing
    // earlier, by an unknown amount: how far apart the members were is unknown.
    if (r.min < kBackToBackNs) continue;
    ++sp.compared;
    sp.compared_at.push_back(g.max_arrival);
    const auto max = static_cast<double>(r.max);
    const auto sum = static_cast<double>(r.sum);
    if (gs.sd < min_sd_ns || max - gs.mean < min_excess_fraction * gs.mean) continue;
    Spread::Op op;
    op.end = g.max_arrival;
    op.gap = r.max;
    op.others = (sum - max) / (g.gaps - 1);
    op.wait = g.gaps * max - sum;
    op.last = g.last_rank;
    sp.wait_ns += op.wait;
    sp.ops.push_back(op);
  }
  std::sort(sp.compared_at.begin(), sp.compared_at.end());
  return sp;
}

double median_lower_tail_in_sigmas(int n) {
  if (n < 2 || n > 256) return 1;
  static std::mutex mutex;
  static std::map<int, double> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(n); it != known.end()) return it->second;
  std::mt19937_64 gen(0x5eed + static_cast<uint64_t>(n));
  std::normal_distribution<double> normal;
  std::vector<double> tails(4001);
  for (double& t : tails) {
    double sum = 0, low = INFINITY, high = -INFINITY;
    for (int i = 0; i < n; ++i) {
      const double x = normal(gen);
      sum += x;
      low = std::min(low, x);
      high = std::max(high, x);
    }
    t = (n >= 3 ? (sum - high) / (n - 1) : sum / n) - low;
  }
  const double median = median_of(std::move(tails)) / lower_tail_in_sigmas(n);
  known.emplace(n, median);
  return median;
}

double expected_max_normal(int n) {
  if (n < 2) return 0;
  static std::mutex mutex;
  static std::map<int, double> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(n); it != known.end()) return it->second;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1), midpoint rule over [-10, 10] (the
  // density is nil beyond it for any n a job has).
  constexpr double kStep = 0.002;
  double sum = 0;
  for (double x = -10 + kStep / 2; x < 10; x += kStep) {
    const double phi = std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * n * phi * std::pow(cdf, n - 1) * kStep;
  }
  known.emplace(n, sum);
  return sum;
}

}  // namespace ringside::analysis
