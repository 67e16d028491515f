// Outlier ops: ops where one member computed far longer before the op than the others,
// far beyond what the members of its communicator usually differ by.  Rare and large,
// they are invisible to medians and to per-rank sign tests (a rank slow in one step of
// five is early or on time in most ops), yet each one holds the whole job up: every
// rank meets every other within a step, so the job waits for that extra work.  Whether
// they make data-dependent imbalance (a different rank each time: detect/imbalance.cpp)
// or a rank that is slow now and then (one owner: detect/straggler.cpp) is up to who
// owns them.
#include <algorithm>
#include <cmath>
#include <map>

#include "detect/context.h"

namespace ringside::analysis {
namespace {

// An op whose spread is this multiple of its communicator's usual one (or the job's
// noise, if larger) is far beyond it: under noise alone about one op in a hundred or
// fewer (a sample deviation of two gaps passes 2.7 times its median 0.7% of the time).
constexpr double kOutlierOverUsual = 4;
// ... and the slowest member computed this fraction longer than the members' mean:
// host noise on the same work stays well below it, and so does work nobody would wait
// for long.
constexpr double kOutlierExcess = 0.15;
// More work for a rank (a longer sample, a slower step) lengthens its compute before
// each of its ops in that stretch, so its outliers come in runs: another of the same
// rank ends within this many of the longer gap of the two.  A delay of the host (the
// process descheduled once) lengthens one gap only.
constexpr double kRunGaps = 3;
// Outliers have an owner when one rank was the slowest at this few of them by chance.
constexpr double kOwnerAlpha = 0.01;

// Time covered by the union of intervals [begin, end), ns.
int64_t covered_time(std::vector<std::pair<int64_t, int64_t>> at) {
  std::sort(at.begin(), at.end());
  int64_t covered = 0, reach = INT64_MIN;
  for (const auto& [b, e] : at) {
    const int64_t from = std::max(b, reach);
    if (e > from) covered += e - from;
    reach = std::max(reach, e);
  }
  return covered;
}

// Of one rank's outlier ops, those whose gaps do not overlap with the largest excess in
// all (weighted interval scheduling over the gaps [end - gap, end)).
std::vector<const OutlierOps::At*> chosen_without_overlap(std::vector<const OutlierOps::At*> ops) {
  std::sort(ops.begin(), ops.end(),
            [](const OutlierOps::At* x, const OutlierOps::At* y) { return x->op.end < y->op.end; });
  auto weight = [](const OutlierOps::At* a) { return static_cast<int64_t>(a->op.excess()); };
  const size_t n = ops.size();
  std::vector<int64_t> best(n + 1, 0);  // best[i]: over the first i ops
  std::vector<size_t> before(n);        // how many ops end no later than op i begins
  for (size_t i = 0; i < n; ++i) {
    const int64_t begin = ops[i]->op.end - ops[i]->op.gap;
    before[i] = static_cast<size_t>(
        std::upper_bound(ops.begin(), ops.begin() + static_cast<long>(i), begin,
                         [](int64_t t, const OutlierOps::At* a) { return t < a->op.end; }) -
        ops.begin());
    best[i + 1] = std::max(best[i], best[before[i]] + weight(ops[i]));
  }
  std::vector<const OutlierOps::At*> chosen;
  for (size_t i = n; i > 0;) {
    if (best[i] != best[i - 1]) {
      chosen.push_back(ops[i - 1]);
      i = before[i - 1];
    } else {
      --i;
    }
  }
  return chosen;
}

// Keeps the ops that have another outlier op of the same rank near them (kRunGaps).
std::vector<OutlierOps::At> in_runs(std::vector<OutlierOps::At> at) {
  std::sort(at.begin(), at.end(), [](const OutlierOps::At& x, const OutlierOps::At& y) {
    return std::pair(x.op.last, x.op.end) < std::pair(y.op.last, y.op.end);
  });
  auto near = [](const OutlierOps::At& x, const OutlierOps::At& y) {
    return x.op.last == y.op.last &&
           std::abs(static_cast<double>(x.op.end - y.op.end)) <=
               kRunGaps * static_cast<double>(std::max(x.op.gap, y.op.gap));
  };
  std::vector<OutlierOps::At> out;
  for (size_t i = 0; i < at.size(); ++i) {
    if ((i > 0 && near(at[i - 1], at[i])) || (i + 1 < at.size() && near(at[i], at[i + 1])))
      out.push_back(at[i]);
  }
  return out;
}

// The chance that a rank is the slowest at k or more of n ops, at one in two each.
double binomial_tail(uint64_t k, uint64_t n) {
  double tail = 0;
  for (uint64_t i = k; i <= n; ++i) {
    tail += std::exp(
        std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1) -
        std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * std::log(2.0));
  }
  return tail;
}

// The quietest communicator's usual spread of compute before its ops, ns (0: none).
double job_noise_sd_ns(const Context& ctx, const std::vector<double>& sd_by_comm) {
  double noise = 0;
  for (const auto& c : ctx.set.comms) {
    const double sd = sd_by_comm[static_cast<size_t>(c.index)];
    if (c.present >= 2 && sd > 0 && (noise == 0 || sd < noise)) noise = sd;
  }
  return noise;
}

}  // namespace

OutlierOps find_outlier_ops(const Context& ctx) {
  OutlierOps out;
  const std::vector<double> sd_by_comm = ctx.stats.gap_sd_ns_by_comm();
  out.noise_sd_ns = job_noise_sd_ns(ctx, sd_by_comm);
  out.wait_by_comm.assign(ctx.set.comms.size(), 0);
  std::vector<OutlierOps::At> candidates;
  for (const auto& c : ctx.set.comms) {
    const double usual = std::max(out.noise_sd_ns, sd_by_comm[static_cast<size_t>(c.index)]);
    if (c.present < 2 || usual <= 0) continue;
    const RankStatsPass::Spread sp =
        ctx.stats.spread(c.index, kOutlierOverUsual * usual, kOutlierExcess);
    out.compared += sp.compared;
    for (const auto& op : sp.ops) candidates.push_back({op, c.index});
  }
  out.at = in_runs(std::move(candidates));
  for (const OutlierOps::At& a : out.at) {
    out.wait_ns += a.op.wait;
    out.wait_by_comm[static_cast<size_t>(a.comm)] += a.op.wait;
    out.excess_ns += a.op.excess();
    out.mean_gap_ns += a.op.others;
    if (a.op.last >= 0) out.wait_by_rank[a.op.last] += a.op.wait;
  }
  // The owner: more than half of the waiting, and not by chance.  Each outlier op has
  // two members or more, so a rank is the slowest at one of its communicators' by chance
  // at most half the time; that it was at k of them must be that unlikely (kOwnerAlpha).
  for (const auto& [r, w] : out.wait_by_rank) {
    if (w <= 0.5 * out.wait_ns) continue;
    uint64_t k = 0, n = 0;
    for (const OutlierOps::At& a : out.at) {
      const auto& m = ctx.set.comms[static_cast<size_t>(a.comm)].members;
      if (std::find(m.begin(), m.end(), r) == m.end()) continue;
      ++n;
      k += a.op.last == r;
    }
    if (binomial_tail(k, n) <= kOwnerAlpha) out.owner = r;
  }
  return out;
}

double OutlierOps::top_share() const {
  double top = 0;
  for (const auto& [r, w] : wait_by_rank) top = std::max(top, w);
  return wait_ns > 0 ? top / wait_ns : 0;
}

uint64_t OutlierOps::ops_of(int64_t rank) const {
  uint64_t n = 0;
  for (const At& a : at) n += a.op.last == rank;
  return n;
}

double OutlierOps::covered_ns(int64_t rank) const {
  std::map<int64_t, std::vector<const At*>> by_rank;
  for (const At& a : at) {
    if (rank < 0 || a.op.last == rank) by_rank[a.op.last].push_back(&a);
  }
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (auto& [r, of_rank] : by_rank) {
    for (const At* a : chosen_without_overlap(of_rank)) intervals.push_back(a->excess());
  }
  return static_cast<double>(covered_time(std::move(intervals)));
}

}  // namespace ringside::analysis
