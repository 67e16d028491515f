// Rooted collectives end on their members apart: a broadcast's root is done once it
// has sent, the chain's tail last; a reduce the other way round.  Between rounds of them
// a benchmark (nccl-tests) meets in an MPI barrier the trace does not see, so the members
// that ended first wait there longest, and the gap before the next round is that wait,
// not compute.  Written op by op: ringside synth makes no rooted collectives.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int kRanks = 8, kPerNode = 4, kRounds = 24, kOpsPerRound = 6;
constexpr uint64_t kWorld = 0x7300;

struct Chain {
  trace::OpKind kind = trace::OpKind::kBroadcast;
  // Between rounds: an untraced barrier (each rank leaves it after a delay of the host),
  // else compute of `compute_ms` after every op, `slow` times as long on `slow_rank`.
  bool barrier = true;
  double compute_ms = 20;
  int slow_rank = -1;
  double slow = 1;
  double hop_ms = 4;  // how much later each member down the chain ends
  uint64_t seed = 1;
};

// The rank's place in the chain: 0 ends first.
int place(const Chain& c, int rank) {
  return c.kind == trace::OpKind::kBroadcast ? rank : kRanks - 1 - rank;
}

Report run_chain(const std::string& dir, const Chain& c) {
  std::mt19937_64 rng(c.seed);
  std::exponential_distribution<double> host_delay(1.0 / 3.0);  // ms
  std::normal_distribution<double> jitter(1.0, 0.02);
  std::vector<std::vector<trace::OpRecord>> ops(kRanks);
  std::vector<int64_t> arrival(kRanks, 1000 * kMs), end(kRanks, 0);
  uint64_t seq = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int j = 0; j < kOpsPerRound; ++j, ++seq) {
      const int64_t last = *std::max_element(arrival.begin(), arrival.end());
      for (int r = 0; r < kRanks; ++r) {
        end[r] = last + 2 * kMs + static_cast<int64_t>(place(c, r) * c.hop_ms * kMs);
        trace::OpRecord op = hand_op(c.kind, kWorld, seq, arrival[r], end[r]);
        op.peer = 0;  // the root
        ops[r].push_back(op);
      }
      for (int r = 0; r < kRanks; ++r) {
        // Within a round the ops are queued: each starts when its stream frees.
        double ms = 0;
        if (!c.barrier) ms = c.compute_ms * jitter(rng) * (r == c.slow_rank ? c.slow : 1);
        arrival[r] = end[r] + static_cast<int64_t>(ms * kMs);
      }
    }
    if (c.barrier) {
      const int64_t released = *std::max_element(end.begin(), end.end()) + kMs / 10;
      for (int r = 0; r < kRanks; ++r)
        arrival[r] = released + 50'000 + static_cast<int64_t>(host_delay(rng) * kMs);
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    write_hand_trace(dir, "chain", r, kRanks, kPerNode, {&comm, 1}, ops[r], end[r] + 10 * kMs);
  }
  AnalyzeOptions options;
  options.progress = false;
  auto report = analyze_directory(dir, options);
  EXPECT_TRUE(report.ok()) << report.message();
  return report.ok() ? report.value() : Report{};
}

std::string name(const Chain& c) {
  return std::string(trace::op_kind_name(c.kind)) + " seed " + std::to_string(c.seed);
}

TEST(RootedChain, TheWaitAfterAnEarlyEndIsNotCompute) {
  for (trace::OpKind kind : {trace::OpKind::kBroadcast, trace::OpKind::kReduce}) {
    for (uint64_t seed : {1, 2, 3, 4}) {
      TempDir dir("rooted-barrier");
      const Chain c{.kind = kind, .seed = seed};
      const Report r = run_chain(dir.path(), c);
      EXPECT_EQ(r.verdict, "healthy") << name(c);
      // The nodes share one clock; the chain's ends are not an offset between them.
      EXPECT_EQ(r.clock.max_abs_offset_ms, 0) << name(c);
      for (const auto& f : r.findings)
        ADD_FAILURE() << name(c) << ": " << f.kind << "/" << f.subkind << ": " << f.evidence;
      // Nor is any rank late by the sign test at the bar of a single test (before, the
      // members that end first were late at every round's first op).
      for (const auto& l : r.extra["late_ranks"]) {
        EXPECT_LT(l["late_evidence"].get<double>(),
                  std::log(1 / AnalyzeOptions{}.thresholds.late_alpha))
            << name(c) << ": rank " << l["rank"] << " late at " << l["late_ops"] << " of "
            << l["late_ops"].get<int>() + l["not_late_ops"].get<int>() << " rounds";
      }
    }
  }
}

// Where the ranks compute between the ops, a slow one is still named, the root (whose
// op ends first) as any other.
TEST(RootedChain, AStragglerAmongRankedEndsIsStillNamed) {
  for (trace::OpKind kind : {trace::OpKind::kBroadcast, trace::OpKind::kReduce}) {
    for (int slow_rank : {0, 5}) {
      TempDir dir("rooted-straggler");
      const Chain c{.kind = kind,
                    .barrier = false,
                    .slow_rank = slow_rank,
                    .slow = 1.25,
                    .hop_ms = 0.3,
                    .seed = static_cast<uint64_t>(slow_rank + 1)};
      const Report r = run_chain(dir.path(), c);
      ASSERT_FALSE(r.findings.empty()) << name(c) << " rank " << slow_rank;
      EXPECT_EQ(r.findings[0].kind, "straggler") << name(c) << " rank " << slow_rank;
      EXPECT_EQ(r.findings[0].ranks, std::vector<int64_t>{slow_rank})
          << name(c) << ": " << r.findings[0].evidence;
      EXPECT_EQ(r.findings.size(), 1u) << name(c) << " rank " << slow_rank;
    }
  }
}

}  // namespace
}  // namespace ringside::analysis::test
