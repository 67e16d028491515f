// Pass 2 over the ops: with every op's group aggregate known, measures each
// rank against its peers in the same op.  The culprit signal is the compute
// gap (time since the rank's previous op ended) compared with the other
// members' gaps for the same op: a slow GPU takes longer between ops, while
// its victims merely wait inside the collective, so waiting is never blamed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "match/group_table.h"

namespace ringside::analysis {

// A rank counts as late at an op when its gap exceeds the others' mean gap by more
// than this fraction of it: the smallest slowdown worth reporting.
inline constexpr double kDefaultLateMargin = 0.02;
// Ops where neither the rank nor its peers computed this long before arriving
// (back-to-back calls) say nothing about compute speed: not counted as above/below.
inline constexpr double kMinInformativeGapNs = kBackToBackNs;

// The median (upper middle for an even count) of `v`, 0 when empty.
template <typename T>
double median_of(std::vector<T> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<long>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return static_cast<double>(*mid);
}

// The median of the sample standard deviation (n - 1) of n values of the same normal
// noise, in units of its sigma (Wilson-Hilferty's approximation of the chi-square
// median): 0.67 for two, 0.95 for eight.  Medians of spreads over groups of different
// sizes compare once divided by it.
inline double median_sd_in_sigmas(int n) {
  if (n < 2) return 1;
  const double k = n - 1;
  const double c = 1 - 2 / (9 * k);
  return std::sqrt(c * c * c);
}

// The expected largest of n independent standard normal draws: how many sigmas the
// slowest of n members that vary alike is, on average, past their mean.
double expected_max_normal(int n);

// The median, over draws of n independent standard normal values, of the spread
// RankStatsPass::SpreadOver::kLowerTail measures: (their mean bar the largest, of both
// with two, - the smallest) over its expectation, so that its mean is 1 sigma for any n;
// its median runs lower the fewer members there are (0.85 for two).  Computed by drawing
// (memoized); 1 beyond 256 members.
double median_lower_tail_in_sigmas(int n);

// How many members a spread without the slowest (SpreadOver) is over, of n.
inline int bulk_members(int n) {
  return n >= 3 ? n - 1 : n;
}

struct Lateness {
  uint64_t groups = 0;  // complete ops with a measurable gap
  uint64_t last = 0;    // ops where this rank arrived last
  uint64_t excess_positive = 0;
  double excess_sum = 0;  // own gap minus the others' mean gap, ns
  double excess_sq_sum = 0;
  double gap_sum = 0;  // own gaps, ns
  double cost_ns = 0;  // time the others waited for this rank because of its excess
  // The part of cost_ns at ops its host issued late (OwnCompute::issued_late): held up on
  // the host, not on its GPU.
  double host_cost_ns = 0;
  double wait_ns = 0;  // time this rank waited for the last arrival
  // The excess summed over the ops where it counted as late: what the rank would cost
  // with no slower rank beside it (a slower one hides it: others wait for that one).
  double late_excess_ns = 0;
  // Sign counts for the sequential test: ops where the gap exceeded the others' mean
  // by more than the late margin (above), and ops where it did not (below).
  uint64_t above = 0, below = 0;

  void add(const Lateness& o);
  double mean_excess() const { return groups ? excess_sum / static_cast<double>(groups) : 0; }
  double mean_gap() const { return groups ? gap_sum / static_cast<double>(groups) : 0; }
  double positive_fraction() const {
    return groups ? static_cast<double>(excess_positive) / static_cast<double>(groups) : 0;
  }
  // Student t of the mean excess (shown for reference; the decision uses late_evidence).
  double t_stat() const;
  // log of the sequential test's likelihood-ratio martingale: a uniform mixture over
  // p of Binomial(p) against p = 1/2 on the above/below counts, 0 unless above > below.
  // Under "not slower than its peers by more than the margin" P(above) <= 1/2 per op,
  // so the chance it ever reaches log(1/alpha) is at most alpha (Ville's inequality).
  double late_evidence() const;
};

struct RankLateness {
  Lateness total;
  // Over every op of the rank, send/recv included: time between ops (its own
  // work) and time inside them (transfers and waiting for peers), ns.  A gap in which the
  // rank created a communicator (RankInfo::made_comm_in) is set-up, not work: left out.
  double compute_ns = 0;
  double inside_ns = 0;
  // Time between ops of communicators that do not run alongside the compute: its own
  // too, unless it waited for an op that otherwise runs alongside.
  double compute_held_ns = 0;
  std::vector<std::pair<int, Lateness>> per_comm;  // comm index
  // Arrival lateness at its complete collectives (own arrival minus the first
  // member's), ms: a bounded sample (bounded_push) for the report's distributions.
  std::vector<float> arrival_late_ms;
  uint64_t arrivals_seen = 0;
  Lateness& comm(int c);
};

// One member's call at a mismatched (comm, seq).
struct CallSignature {
  int64_t rank;
  uint8_t op, dtype;
  uint64_t count;
  int32_t root;
};

struct MismatchDetail {
  int comm;
  uint64_t seq;
  std::vector<CallSignature> calls;
};

class RankStatsPass {
 public:
  // `sample_arrivals`: keep RankLateness::arrival_late_ms (the HTML report's distributions).
  explicit RankStatsPass(const GroupTable& table, double late_margin = kDefaultLateMargin,
                         bool sample_arrivals = true);
  // `held`: the rank's own compute kept by an earlier pass, if any (GroupTable::own_compute).
  Status add_rank(const RankInfo& rank, std::span<const trace::OpRecord> rows,
                  HeldOwnCompute* held = nullptr);

  const std::vector<RankLateness>& ranks() const { return ranks_; }
  const std::vector<MismatchDetail>& mismatches() const { return mismatch_details_; }
  // What spreads of the members' compute before an op are measured over.  kPrimary:
  // every op, in the primary reading (match/own_compute.h).  kBulk: the same, of all
  // members but the slowest (with three or more; see below).  kLowerTail: the ops before
  // which every member computed in one stretch (OwnCompute::split), in the reading where
  // the members are the least spread, measured by how far their mean (bar the slowest,
  // with three or more) is above the fastest of them.  A gap of several stretches (a
  // gradient bucket's, over part of a backward pass with tensor-parallel ops in it), or
  // one that began inside the compute (after an op that ran alongside, where the primary
  // reading holds how far the members drifted apart since they last met), collects a
  // rare delay of the host from all of its stretches; in one stretch it stays rare.  A
  // reading that does not apply can hide a spread but cannot make one up.  Ops that a member
  // started the moment its stream freed are left out (its compute ended earlier, by an unknown
  // amount).  A delay of the host only lengthens a stretch: it puts a member far above the others,
  // moves their mean a little and the fastest not at all, while work that differs spreads the
  // members on both sides.  With many members most ops hold a delayed one, or several (1% of the
  // stretches delayed over 256 members: two or more in 73% of the ops), so a spread about
  // the mean, even without the slowest, would take the delays for work; the lower tail
  // does not.  It is counted in sigmas of a normal spread (divided by its expectation:
  // expected_max_normal(n) x (n - 2) / (n - 1), or expected_max_normal(2) for two), and
  // its medians over ops compare across sizes once divided by
  // median_lower_tail_in_sigmas(n).
  enum class SpreadOver : uint8_t { kPrimary, kBulk, kLowerTail };
  // Median over complete ops of the coefficient of variation of the members' gaps.
  double median_gap_cv(SpreadOver over = SpreadOver::kPrimary) const;
  // Median over complete ops of the standard deviation of the members' gaps, ns.
  double median_gap_sd_ns() const;
  // The same two, per communicator (index = comm index; 0 where no op qualifies), from
  // one pass over the ops; and the standard deviations alone.
  struct GapSpreadByComm {
    std::vector<double> cv, sd_ns;
  };
  GapSpreadByComm gap_spread_by_comm(SpreadOver over = SpreadOver::kPrimary) const;
  std::vector<double> gap_sd_ns_by_comm(SpreadOver over = SpreadOver::kPrimary) const;
  // What the members of communicator `comm` (index) waited for the one that computed
  // longest before each op, had they started together: over the ops every member has
  // a reading for whose gaps' standard deviation is at least `min_sd_ns` and whose
  // largest gap exceeds their mean by `min_excess_fraction` of it, the sum over
  // members of (largest gap - own gap), rank-ns; and those ops one by one.
  struct Spread {
    struct Op {
      int64_t end = 0;    // the last arrival, job ns
      int64_t gap = 0;    // the longest gap (the slowest member's compute before the op)
      double others = 0;  // the other members' mean gap
      double wait = 0;    // what the members waited, rank-ns
      int64_t last = -1;  // the rank that arrived last
      double excess() const { return static_cast<double>(gap) - others; }
    };
    double wait_ns = 0;
    uint64_t compared = 0;             // ops every member has a reading for, none queued
    std::vector<int64_t> compared_at;  // their last arrivals, job ns, ascending
    std::vector<Op> ops;               // the ops counted
  };
  Spread spread(int comm, double min_sd_ns = 0, double min_excess_fraction = 0) const;
  uint64_t records() const { return records_; }

  // A parallel analysis (parallel/process_group.h; match/rank_stats_merge.cpp): what
  // add_rank of `ranks` (this process's share) measured, and the merge, in process
  // order, of every process's into a fresh pass.
  void save_partial(ByteWriter& w, std::span<const int64_t> ranks) const;
  void merge_partial(ByteReader& r);

 private:
  const GroupTable& table_;
  double late_margin_;
  bool sample_arrivals_;
  std::vector<RankLateness> ranks_;
  std::vector<MismatchDetail> mismatch_details_;
  uint64_t records_ = 0;
};

}  // namespace ringside::analysis
