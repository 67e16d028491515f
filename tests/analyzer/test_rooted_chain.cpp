// Rooted collectives end on their members apart: a broadcast's root is done once it
// has sent, the chain's tail last; a reduce the other way round.  Between rounds of them
// a benchmark (nccl-tests) meets in an MPI barrier the trace does not see, so the members
// that ended first wait there longest, and the gap before the next round is that wait,
// not compute.  Leaving the barrier late, a rank's host issues its ops late, to an idle
// stream: on hosts whose ranks waited for a CPU longer than that, not its own delay.
// Written op by op: ringside synth makes no rooted collectives, nor barriers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

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
  // Leaves the barrier this much later than the others in every round (its host issues
  // its ops late).
  int late_host_rank = -1;
  double late_host_ms = 0;
  double host_wait_s = 0;  // each rank's threads waited this long for a CPU
  bool one_flush = false;  // known from one flush, at the end (a short job)
  uint64_t seed = 1;
};

// The rank's place in the chain: 0 ends first.  Unrooted collectives end together.
int place(const Chain& c, int rank) {
  if (!trace::is_rooted(c.kind)) return 0;
  return c.kind == trace::OpKind::kBroadcast ? rank : kRanks - 1 - rank;
}

Report run_chain(const std::string& dir, const Chain& c) {
  std::mt19937_64 rng(c.seed);
  std::exponential_distribution<double> host_delay(1.0 / 3.0);  // ms
  std::normal_distribution<double> jitter(1.0, 0.02);
  std::vector<std::vector<trace::OpRecord>> ops(kRanks);
  std::vector<int64_t> arrival(kRanks, 1000 * kMs), end(kRanks, 0);
  // When the host issued each rank's next op: with a barrier, as it left it (the op starts
  // at once on an idle stream); else right after its previous op, ahead of its GPU's compute.
  std::vector<int64_t> issued(kRanks, 1000 * kMs - 30'000);
  uint64_t seq = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int j = 0; j < kOpsPerRound; ++j, ++seq) {
      const int64_t last = *std::max_element(arrival.begin(), arrival.end());
      for (int r = 0; r < kRanks; ++r) {
        end[r] = last + 2 * kMs + static_cast<int64_t>(place(c, r) * c.hop_ms * kMs);
        trace::OpRecord op = hand_op(c.kind, kWorld, seq, arrival[r], end[r]);
        if (trace::is_rooted(c.kind)) op.peer = 0;  // the root
        op.t_enter_ns = issued[r];
        op.t_exit_ns = issued[r] + 10'000;
        ops[r].push_back(op);
      }
      for (int r = 0; r < kRanks; ++r) {
        // Within a round the ops are queued: each starts when its stream frees.
        double ms = 0;
        if (!c.barrier) ms = c.compute_ms * jitter(rng) * (r == c.slow_rank ? c.slow : 1);
        arrival[r] = end[r] + static_cast<int64_t>(ms * kMs);
        issued[r] = std::min(arrival[r], end[r] + 50'000) - 30'000;
      }
    }
    if (c.barrier) {
      const int64_t released = *std::max_element(end.begin(), end.end()) + kMs / 10;
      for (int r = 0; r < kRanks; ++r) {
        double ms = host_delay(rng);
        if (r == c.late_host_rank) ms += c.late_host_ms;
        arrival[r] = released + 50'000 + static_cast<int64_t>(ms * kMs);
        issued[r] = arrival[r] - 30'000;
      }
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    write_hand_trace(dir, "chain", r, kRanks, kPerNode, {&comm, 1}, ops[r], end[r] + 10 * kMs,
                     static_cast<int64_t>(c.host_wait_s * 1e9), c.one_flush);
  }
  return analyze_quietly(dir);
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

// A rank whose host issues its ops late (it leaves each barrier last, its ops start at once
// on an idle stream) holds the others up.  On hosts whose ranks waited for a CPU longer than
// that cost, as 8 processes on 2 cores do, the delay is not known to be its own: no
// finding.  With no such wait it is a straggler; and a rank whose GPU computes longer
// (its host issues ops ahead of it) is one whatever the hosts waited.
TEST(RootedChain, AHostLateOnlyWhileItsRanksWaitedForACpuIsNoStraggler) {
  for (trace::OpKind kind : {trace::OpKind::kBroadcast, trace::OpKind::kAllReduce}) {
    for (auto [host_wait_s, one_flush] : {std::pair{0.0, false}, {3.0, false}, {3.0, true}}) {
      TempDir dir("late-host");
      const Chain c{.kind = kind,
                    .late_host_rank = 3,
                    .late_host_ms = 6,
                    .host_wait_s = host_wait_s,
                    .one_flush = one_flush,
                    .seed = 7};
      const Report r = run_chain(dir.path(), c);
      const std::string what =
          name(c) + " host wait " + std::to_string(host_wait_s) + (one_flush ? " (one flush)" : "");
      if (host_wait_s > 0) {
        for (const auto& f : r.findings)
          ADD_FAILURE() << what << ": " << f.kind << "/" << f.subkind << ": " << f.evidence;
      } else {
        ASSERT_FALSE(r.findings.empty()) << what;
        EXPECT_EQ(r.findings[0].kind, "straggler") << what;
        EXPECT_EQ(r.findings[0].ranks, std::vector<int64_t>{3}) << what;
      }
    }
    TempDir dir("late-gpu");
    const Chain c{.kind = kind,
                  .barrier = false,
                  .slow_rank = 3,
                  .slow = 1.25,
                  .hop_ms = 0.3,
                  .host_wait_s = 3.0,
                  .seed = 7};
    const Report r = run_chain(dir.path(), c);
    ASSERT_FALSE(r.findings.empty()) << name(c);
    EXPECT_EQ(r.findings[0].kind, "straggler") << name(c);
    EXPECT_EQ(r.findings[0].ranks, std::vector<int64_t>{3}) << name(c);
  }
}

}  // namespace
}  // namespace ringside::analysis::test
