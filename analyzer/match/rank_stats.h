// Pass 2 over the ops: with every op's group aggregate known, measures each
// rank against its peers in the same op.  The culprit signal is the compute
// gap (time since the rank's previous op ended) compared with the other
// members' gaps for the same op: a slow GPU takes longer between ops, while
// its victims merely wait inside the collective, so waiting is never blamed.
#pragma once

#include <cstdint>
#include <vector>

#include "match/group_table.h"

namespace ringside::analysis {

struct Lateness {
  uint64_t groups = 0;  // complete ops with a measurable gap
  uint64_t last = 0;    // ops where this rank arrived last
  uint64_t excess_positive = 0;
  double excess_sum = 0;  // own gap minus the others' mean gap, ns
  double excess_sq_sum = 0;
  double gap_sum = 0;  // own gaps, ns
  double cost_ns = 0;  // time the others waited for this rank because of its excess
  double wait_ns = 0;  // time this rank waited for the last arrival

  void add(const Lateness& o);
  double mean_excess() const { return groups ? excess_sum / static_cast<double>(groups) : 0; }
  double mean_gap() const { return groups ? gap_sum / static_cast<double>(groups) : 0; }
  double positive_fraction() const {
    return groups ? static_cast<double>(excess_positive) / static_cast<double>(groups) : 0;
  }
  // Student t of the mean excess (how sure we are it is not noise).
  double t_stat() const;
};

struct RankLateness {
  Lateness total;
  // Over every op of the rank, send/recv included: time between ops (its own
  // work) and time inside them (transfers and waiting for peers), ns.
  double compute_ns = 0;
  double inside_ns = 0;
  std::vector<std::pair<int, Lateness>> per_comm;  // comm index
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
  explicit RankStatsPass(const GroupTable& table);
  Status add_rank(const RankInfo& rank, const trace::TraceReader& reader, size_t batch);

  const std::vector<RankLateness>& ranks() const { return ranks_; }
  const std::vector<MismatchDetail>& mismatches() const { return mismatch_details_; }
  // Median over complete ops of the coefficient of variation of the members' gaps.
  double median_gap_cv() const;
  // Median over complete ops of the standard deviation of the members' gaps, ns.
  double median_gap_sd_ns() const;
  uint64_t records() const { return records_; }

 private:
  const GroupTable& table_;
  std::vector<RankLateness> ranks_;
  std::vector<MismatchDetail> mismatch_details_;
  uint64_t records_ = 0;
};

}  // namespace ringside::analysis
