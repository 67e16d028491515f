// What every detector reads: the job, the matched ops, per-rank lateness, and
// the thresholds (all in one place so docs/analyzer.md can list them).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "load/trace_set.h"
#include "match/group_table.h"
#include "match/rank_stats.h"
#include "match/sibling_lateness.h"
#include "report/report.h"

namespace ringside::analysis {

struct Thresholds {
  double min_cost_fraction = 0.01;  // a slowdown must cost >= 1% of the job to be reported
  int min_groups = 8;               // ops a rank must share with peers before judging it
  // Lateness: the sequential sign test of rank_stats.h.  An op counts against a rank when
  // its own compute before the op exceeds the other members' by more than `late_margin`
  // of theirs; `late_alpha` bounds the chance that any rank of a healthy job is called
  // late (split over all the tests made, Bonferroni).
  double late_margin = kDefaultLateMargin;
  double late_alpha = 0.01;
  // Data-dependent imbalance (compute before shared ops differing between ranks or
  // replicas, with no owner): the spread must be at least this in absolute terms
  // (microsecond gaps between back-to-back collectives, as in benchmarks, vary by
  // launch jitter, not by work), and, as it has no culprit to fix and shared hosts add
  // a few percent of uneven waiting on their own, cost this much of the job.
  double imbalance_min_cost_fraction = 0.05;
  double imbalance_min_sd_ns = 500'000;
  // Pipeline stages only meet in send/recv: a structure whose ranks compute this much
  // longer between communication calls than the rest (mean over mean), each of them
  // longer than every other rank by `stage_separation`, is structural imbalance.
  double stage_compute_ratio = 1.25;
  double stage_separation = 1.1;
  double slow_link_ratio = 0.6;              // bus bandwidth below this fraction of its peers'
  uint64_t slow_link_min_bytes = 128 << 10;  // smaller messages are latency-bound
  // A slow send/recv pair must also take this much longer per transfer than the
  // reference: timing a transfer between two nodes' traces carries their clock
  // alignment error and scheduling noise, which can make short transfers look fast.
  double slow_link_min_extra_ns = 1e6;
  double hang_min_wait_s = 5;  // an op outstanding this long at the end is a hang
  double dead_gap_s = 10;      // a trace ending this long before the others' is a dead rank
  // A trace flushed this long after the others began waiting: alive then (the
  // probe flushes every second by default, so a live process shows it).
  double alive_margin_s = 3;
  // The traces may still be growing (ringside watch): files not closed yet are
  // not an abnormal end, and a job before its first collective is not "no_ops".
  bool live = false;
  double throttle_fraction = 0.1;  // samples with slowdown reasons for a gpu_health finding
};

struct Context {
  const TraceSet& set;
  const GroupTable& groups;
  const RankStatsPass& stats;
  const SiblingLateness& siblings;
  const Thresholds& th;
  double job_start_ns = 0;
  double job_end_ns = 0;
  const LinkMatrix* links = nullptr;  // from the profiler plugin's /links; null: none built
  double job_seconds() const { return (job_end_ns - job_start_ns) / 1e9; }
  // Last flush in job time (or last activity when there were no flushes).
  int64_t last_seen_ns(int64_t rank) const;
  std::string describe_rank(int64_t rank) const;  // "rank 5 (node1, GPU 5)"
  std::vector<std::string> nodes_of(const std::vector<int64_t>& ranks) const;
  // Seconds the threads of an average rank waited for a CPU between the job's (or
  // window's) start and end (the probe's host_run_delay_ns), or nullopt when no
  // rank's trace says: mean_host_wait_s(), kept once the span is known.
  std::optional<double> host_wait_s;
  std::optional<double> mean_host_wait_s() const;
  // Whether host_wait_s is at least `cost_s`: on a host with more runnable threads than
  // cores, lateness that costs no more is not known to be the ranks' own.
  bool host_wait_covers(double cost_s) const { return host_wait_s && *host_wait_s >= cost_s; }
};

// Ranks late together: a node, or a structure of the job's communicators.
struct LateSet {
  enum class Kind { kNode, kStage, kReplica, kTensorPosition, kComm };
  Kind kind = Kind::kNode;
  std::vector<int64_t> ranks;      // sorted
  int node = -1;                   // kNode: node index
  const CommInfo* comm = nullptr;  // a communicator of the structure
  int position = -1;               // the position in its communicators, if any
  std::string label;               // "pipeline stage 1 (...)", "node3"
  std::string advice;              // what to do about a structure doing more work
};

// The job's late ranks and the sets they make up, found once for every detector
// (detect/late_sets.cpp).
struct LateRanks {
  std::vector<LateSet> candidates;  // every set late ranks could make up
  std::vector<int64_t> ranks;       // ranks whose own compute before ops exceeds their
                                    // peers' persistently, strongest first
  std::vector<LateSet> sets;        // the sets chosen to explain them together
  // Late ranks that are late against members of their own pipeline stage (all of
  // them when there are no stages), sorted: only these can be stragglers on their
  // own; the others are late only against ranks doing other work.
  std::vector<int64_t> alone;

  // Whether any of `ranks` is late against members of its own stage.
  bool any_alone(const std::vector<int64_t>& of) const {
    return std::any_of(of.begin(), of.end(), [&](int64_t r) {
      return std::binary_search(alone.begin(), alone.end(), r);
    });
  }
};
LateRanks find_late_ranks(const Context& ctx);
// The structure (not a node) among `candidates` whose ranks are exactly `ranks`, if any.
std::optional<LateSet> structure_of(const std::vector<LateSet>& candidates,
                                    const std::set<int64_t>& ranks);
// A rank's lateness pooled over every op it shares, whatever the communicator.
Lateness pooled_lateness(const Context& ctx, int64_t rank);
// The lateness of a set of ranks: pooled over its ranks' ops, or, when that says
// they cost less, over the sibling comparisons (match/sibling_lateness.h) of the
// communicators inside the set, each counted once.
Lateness set_lateness(const Context& ctx, const std::vector<int64_t>& ranks);
// "1.20 ms more (15% longer)": a set's mean excess over the others' compute before the
// ops they share; the share is left out where the others' compute there is vanishingly
// small (ranks that start those ops at once, having waited in another op before them).
std::string excess_text(const Lateness& sum);
// The same excess as a fraction of the others' compute (0.15 for 15% longer); 0 where
// they computed nothing before those ops.
double relative_excess(const Lateness& sum);
// How sure a finding whose only evidence is its cost is: 30% at the bar that rank-less
// slowdowns must reach (imbalance_min_cost_fraction), 90% at three times it.
double confidence_from_cost(const Context& ctx, double cost_s);
// What a late rank would cost with no slower rank beside it, s: its excess over the
// ops where it was late, in the communicator where that is largest.
double potential_cost_s(const Context& ctx, int64_t rank);

// Ops where one member computed far longer before the op than the others, far beyond
// the usual spread of its communicator, with more such ops of that rank around them
// (detect/outlier_ops.cpp).
struct OutlierOps {
  struct At {
    RankStatsPass::Spread::Op op;
    int comm = -1;  // comm index
    // When the slowest member's excess ran, ending at the last arrival, job ns.
    std::pair<int64_t, int64_t> excess() const {
      return {op.end - static_cast<int64_t>(op.excess()), op.end};
    }
  };
  // Per communicator (index), the usual spread of its members' compute before an op:
  // the median over ops of the spread of all members bar the slowest, ns.
  std::vector<double> usual_sd_by_comm;
  double wait_ns = 0;                // what the other members waited at these ops, rank-ns
  double excess_ns = 0;              // the slowest member's excess over the others' mean, summed
  double mean_gap_ns = 0;            // the others' mean compute before these ops, summed
  uint64_t compared = 0;             // ops compared
  std::vector<double> wait_by_comm;  // comm index -> wait_ns
  std::map<int64_t, double> wait_by_rank;  // the last arrival -> wait_ns
  // The outlier ops: every candidate when one rank owns them, else those in runs.
  std::vector<At> at;
  // The rank that arrived last where more than half of the waiting was, at more of its
  // communicators' outlier ops than chance would make it, or -1.
  int64_t owner = -1;
  double top_share() const;  // the largest share of wait_ns one rank was last at
  uint64_t ops_of(int64_t rank) const;
  // What the job waited for the excesses (of `rank`'s, or everyone's with -1), ns: per
  // rank the most they add up to over ops whose gaps do not overlap (the gap before an
  // op on one stream can hold those before ops on others, and the same extra work),
  // then the time they cover (extra work of several ranks at once counts once).
  double covered_ns(int64_t rank = -1) const;
};
OutlierOps find_outlier_ops(const Context& ctx);

// Reports the late sets that are structures of the job (and heavy stages or data-
// dependent imbalance when nothing is late); removes the ranks it explained from
// `late.ranks`.
void detect_imbalance(const Context& ctx, LateRanks& late, const OutlierOps& outliers,
                      std::vector<Finding>& out);
// Reports the late nodes, then each late rank left as a straggler of its own.
// With no late rank, a rank that owns the outlier ops (straggler/intermittent).
void detect_stragglers(const Context& ctx, const LateRanks& late, const OutlierOps& outliers,
                       std::vector<Finding>& out);
// A slow link that cost the job less than th.min_cost_fraction goes to `below_cost`.
void detect_slow_links(const Context& ctx, std::vector<Finding>& out,
                       std::vector<Finding>& below_cost);
// True if send/recv pairs were timed often enough, with large enough messages, to
// judge links from them (what detect_slow_links uses without profiler events).
bool send_recv_pairs_timed(const Context& ctx);
// `notes`: what the report warns of without a finding (ranks that ended without an exit
// record in a job that otherwise ended normally).
void detect_hangs(const Context& ctx, std::vector<Finding>& out, std::vector<std::string>& notes);
void detect_desyncs(const Context& ctx, std::vector<Finding>& out);
void detect_gpu_health(const Context& ctx, std::vector<Finding>& out);
void detect_missing_traces(const Context& ctx, std::vector<Finding>& out);

// What a straggler's GPU counters say: "throttling", "low_clocks", "xid" or
// "unknown", with a sentence.
struct CauseGuess {
  std::string cause;
  std::string sentence;
};
CauseGuess gpu_cause(const Context& ctx, const std::vector<int64_t>& ranks);

}  // namespace ringside::analysis
