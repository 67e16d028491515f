// Outlier ops: ops where one member computed far longer before the op than the others,
// far beyond what the members of its communicator usually differ by.  Rare and large,
// they are invisible to medians and to per-rank sign tests (a rank slow in one step of
// five is early or on time in most ops), yet each one holds the whole job up: every
// rank meets every other within a step, so the job waits for that extra work.  Whether
// they make data-dependent imbalance (a different rank each time: detect/imbalance.cpp)
// or a rank that is slow now and then (one owner: detect/straggler.cpp) is up to who
// owns them.
//
// Delays of the host (a process descheduled once) make candidates too, on every rank
// alike.  So the candidates count as they are when one rank owns them; otherwise only
// those in runs count, the mark of extra work.  Ops that a member started the moment
// its stream freed are never candidates (RankStatsPass::spread): the member's compute
// ended earlier by an unknown amount, and a member delayed once stays behind the others
// at each such op until they meet again, which would look like a run.
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
// rank, whose gap does not overlap, ends within this many of the longer gap of the two.
// A delay of the host lengthens one stretch of compute only (which the gaps before ops
// on two streams may both hold).
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

// Candidates by the rank that arrived last, each list in order of end.
using ByRank = std::map<int64_t, std::vector<const OutlierOps::At*>>;
ByRank by_rank(const std::vector<OutlierOps::At>& at) {
  ByRank out;
  for (const OutlierOps::At& a : at) out[a.op.last].push_back(&a);
  for (auto& [r, list] : out) {
    std::sort(list.begin(), list.end(), [](const OutlierOps::At* x, const OutlierOps::At* y) {
      return x->op.end < y->op.end;
    });
  }
  return out;
}

// The ops compared in each communicator (Spread::compared_at) and each rank's
// communicators: how many of a rank's ops were compared in a stretch of time.
class Compared {
 public:
  explicit Compared(const Context& ctx)
      : at_(ctx.set.comms.size()), of_rank_(ctx.set.ranks.size()) {
    for (const auto& c : ctx.set.comms) {
      for (int64_t m : c.members) {
        if (m >= 0 && static_cast<size_t>(m) < of_rank_.size())
          of_rank_[static_cast<size_t>(m)].push_back(c.index);
      }
    }
  }
  void set(int comm, std::vector<int64_t> ends) {
    at_[static_cast<size_t>(comm)] = std::move(ends);
  }
  // The rank's compared ops that ended in [from, to].
  size_t of(int64_t rank, int64_t from, int64_t to) const {
    if (rank < 0 || static_cast<size_t>(rank) >= of_rank_.size()) return 0;
    size_t n = 0;
    for (int c : of_rank_[static_cast<size_t>(rank)]) {
      const auto& e = at_[static_cast<size_t>(c)];
      n += static_cast<size_t>(std::upper_bound(e.begin(), e.end(), to) -
                               std::lower_bound(e.begin(), e.end(), from));
    }
    return n;
  }

 private:
  std::vector<std::vector<int64_t>> at_;
  std::vector<std::vector<int>> of_rank_;
};

int64_t reach(int64_t gap) {
  return static_cast<int64_t>(kRunGaps * static_cast<double>(gap));
}

// Whether `x` is in a run of its rank's (`list`, in order of end): another op of the
// list whose gap does not overlap x's (two ops whose gaps hold the same stretch of
// compute show one delay twice) ends within kRunGaps of the longer gap of the two, and
// the rank was the outlier in at least half of the ops of its communicators compared
// within kRunGaps of x's gap (more work lengthens all of them; delays that happen to
// fall close by leave most alone).
bool in_run(const OutlierOps::At& x, const std::vector<const OutlierOps::At*>& list,
            int64_t longest_gap, const Compared& compared) {
  const int64_t widest = reach(std::max(x.op.gap, longest_gap));
  auto first = [&](int64_t t) {
    return std::lower_bound(list.begin(), list.end(), t,
                            [](const OutlierOps::At* a, int64_t v) { return a->op.end < v; });
  };
  bool partner = false;
  for (auto it = first(x.op.end - widest); it != list.end() && (*it)->op.end <= x.op.end + widest;
       ++it) {
    const OutlierOps::At& y = **it;
    const bool apart = x.op.end <= y.op.end - y.op.gap || y.op.end <= x.op.end - x.op.gap;
    partner = partner || (&y != &x && apart &&
                          std::abs(x.op.end - y.op.end) <= reach(std::max(x.op.gap, y.op.gap)));
  }
  if (!partner) return false;
  const int64_t from = x.op.end - reach(x.op.gap), to = x.op.end + reach(x.op.gap);
  size_t mine = 0;
  for (auto it = first(from); it != list.end() && (*it)->op.end <= to; ++it) ++mine;
  return 2 * mine >= compared.of(x.op.last, from, to);
}

int64_t longest_gap(const std::vector<const OutlierOps::At*>& list) {
  int64_t g = 0;
  for (const OutlierOps::At* a : list) g = std::max(g, a->op.gap);
  return g;
}

// The candidates that make a run with another of the same rank.
std::vector<OutlierOps::At> in_runs(const std::vector<OutlierOps::At>& candidates,
                                    const Compared& compared) {
  const ByRank lists = by_rank(candidates);
  std::vector<OutlierOps::At> out;
  for (const auto& [r, list] : lists) {
    const int64_t longest = longest_gap(list);
    for (const OutlierOps::At* a : list) {
      if (in_run(*a, list, longest, compared)) out.push_back(*a);
    }
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

// Of the episodes among `at` seen by `rank` (outlier ops of its communicators that follow
// one another within kRunGaps of the longer gap of two, in order of end), how many were
// its own (more than half of their waiting was for it), and how many there were.
std::pair<uint64_t, uint64_t> episodes_of(const Context& ctx, const std::vector<OutlierOps::At>& at,
                                          int64_t rank) {
  std::vector<const OutlierOps::At*> seen;
  for (const OutlierOps::At& a : at) {
    const auto& m = ctx.set.comms[static_cast<size_t>(a.comm)].members;
    if (std::find(m.begin(), m.end(), rank) != m.end()) seen.push_back(&a);
  }
  std::sort(seen.begin(), seen.end(),
            [](const OutlierOps::At* x, const OutlierOps::At* y) { return x->op.end < y->op.end; });
  uint64_t own = 0, episodes = 0;
  double wait = 0, its = 0;  // of the episode so far
  for (size_t i = 0; i < seen.size(); ++i) {
    const RankStatsPass::Spread::Op& op = seen[i]->op;
    if (i > 0) {
      const RankStatsPass::Spread::Op& prev = seen[i - 1]->op;
      if (op.end - prev.end > reach(std::max(op.gap, prev.gap))) {
        ++episodes;
        own += 2 * its > wait;
        wait = its = 0;
      }
    }
    wait += op.wait;
    its += op.last == rank ? op.wait : 0;
  }
  if (!seen.empty()) {
    ++episodes;
    own += 2 * its > wait;
  }
  return {own, episodes};
}

// Sets `at` and what follows from it: the sums and the owner.
void tally(const Context& ctx, std::vector<OutlierOps::At> at, OutlierOps& out) {
  out.at = std::move(at);
  out.wait_ns = out.excess_ns = out.mean_gap_ns = 0;
  out.wait_by_comm.assign(ctx.set.comms.size(), 0);
  out.wait_by_rank.clear();
  out.owner = -1;
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
  // The trials are episodes, not ops: one longer stretch of work (a long sample, a slow
  // step) makes outliers of every op it precedes, on each of the rank's communicators,
  // all of them one draw of chance.
  for (const auto& [r, w] : out.wait_by_rank) {
    if (w <= 0.5 * out.wait_ns) continue;
    const auto [k, n] = episodes_of(ctx, out.at, r);
    if (binomial_tail(k, n) <= kOwnerAlpha) out.owner = r;
  }
}

}  // namespace

OutlierOps find_outlier_ops(const Context& ctx) {
  OutlierOps out;
  // A communicator's usual spread is that of its members bar the slowest: where one
  // member is far out in most ops (a long sample in every step), that is what stands out.
  out.usual_sd_by_comm = ctx.stats.gap_sd_ns_by_comm(RankStatsPass::SpreadOver::kBulk);
  const double noise = job_noise_sd_ns(ctx, out.usual_sd_by_comm);
  std::vector<OutlierOps::At> candidates;
  Compared compared(ctx);
  for (const auto& c : ctx.set.comms) {
    const double usual = std::max(noise, out.usual_sd_by_comm[static_cast<size_t>(c.index)]);
    if (c.present < 2 || usual <= 0) continue;
    RankStatsPass::Spread sp = ctx.stats.spread(c.index, kOutlierOverUsual * usual, kOutlierExcess);
    out.compared += sp.compared;
    compared.set(c.index, std::move(sp.compared_at));
    for (const auto& op : sp.ops) candidates.push_back({op, c.index});
  }
  // A rank that owns the candidates is slow now and then: delays of the host fall on
  // every rank alike.  Without one, only runs tell extra work from such delays.
  tally(ctx, candidates, out);
  if (out.owner < 0) tally(ctx, in_runs(candidates, compared), out);
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
