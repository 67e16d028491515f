// The lateness statistics and the detectors built on them: own-time attribution
// across streams, the sequential sign test and its false-alarm bound, the node
// rule, replica imbalance, sensitivity, and what-if bounds, on synthetic inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "match/group_table.h"
#include "match/own_compute.h"
#include "match/rank_stats.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

using Ranks = std::vector<int64_t>;
using Nodes = std::vector<std::string>;

TEST(OwnTimeline, CountsOnlyOtherStreamsAndMergesOverlaps) {
  // Stream 1: [0,10) [20,30); stream 2: [5,15) [12,18) (overlapping) ; stream 3: [40,50).
  OwnTimeline t({{0, 10, 1}, {20, 30, 1}, {5, 15, 2}, {12, 18, 2}, {40, 50, 3}});
  EXPECT_EQ(t.other_busy(1, 0, 100), 13 + 10);  // stream 2 merged [5,18) + stream 3
  EXPECT_EQ(t.other_busy(2, 0, 100), 20 + 10);
  EXPECT_EQ(t.other_busy(3, 0, 100), 10 + 13 + 10 - 5);  // [0,18) and [20,30)
  EXPECT_EQ(t.other_busy(1, 10, 16), 6);
  EXPECT_EQ(t.other_busy(1, 18, 40), 0);
  EXPECT_EQ(t.other_busy(1, 16, 12), 0);
  // One stream only: nothing to subtract.
  OwnTimeline single({{0, 10, 7}, {20, 30, 7}});
  EXPECT_EQ(single.other_busy(7, 0, 100), 0);
}

TEST(OwnTimeline, AnswersLikeCountingEveryNanosecondWhateverTheOrderOfQuestions) {
  // Lookups start from where the last ones ended: questions in order of time (as
  // OwnCompute asks), a little back, and far apart must all get the exact answer.
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<OwnTimeline::Interval> ops;
    std::uniform_int_distribution<int64_t> len(1, 40), skip(0, 30), stream(1, 3);
    int64_t t = 0;
    for (int i = 0; i < 60; ++i) {
      t += skip(gen);
      ops.push_back({t, t + len(gen), static_cast<uint64_t>(stream(gen))});
    }
    const int64_t horizon = t + 50;
    std::vector<std::vector<int>> busy(4, std::vector<int>(static_cast<size_t>(horizon), 0));
    for (const auto& o : ops) {
      for (int64_t x = o.begin; x < o.end; ++x) {
        for (uint64_t s = 0; s < 4; ++s) {
          if (s != o.stream) busy[s][static_cast<size_t>(x)] = 1;
        }
      }
    }
    auto expect = [&](uint64_t s, int64_t from, int64_t to) {
      int64_t n = 0;
      for (int64_t x = std::max<int64_t>(from, 0); x < to; ++x)
        n += busy[s][static_cast<size_t>(x)];
      return n;
    };
    const OwnTimeline timeline(ops);
    std::uniform_int_distribution<int64_t> at(-10, horizon), back(0, 60), width(0, 80);
    std::uniform_int_distribution<uint64_t> asked(0, 3);  // stream 0 holds none
    int64_t cursor = 0;
    for (int q = 0; q < 400; ++q) {
      // Mostly forward from the last question, sometimes back, sometimes anywhere.
      const int kind = q % 7;
      cursor = kind == 5 ? at(gen) : kind == 6 ? cursor - back(gen) : cursor + skip(gen);
      cursor = std::clamp<int64_t>(cursor, -10, horizon - 1);
      const int64_t to = std::min(horizon, cursor + width(gen));
      const uint64_t s = asked(gen);
      ASSERT_EQ(timeline.other_busy(s, cursor, to), expect(s, cursor, to))
          << "trial " << trial << " question " << q << " [" << cursor << ", " << to << ")";
    }
  }
}

// One complete op for OwnCompute: device times in ns, job time = local time.
trace::OpRecord timed_op(uint64_t comm, uint64_t seq, uint64_t stream, int64_t start, int64_t end,
                         trace::OpKind kind = trace::OpKind::kAllReduce) {
  trace::OpRecord op{};
  op.t_enter_ns = start;
  op.t_exit_ns = start;
  op.t_dev_start_ns = start;
  op.t_dev_end_ns = end;
  op.comm_id = comm;
  op.seq = seq;
  op.stream = stream;
  op.peer = -1;
  op.op = static_cast<uint8_t>(kind);
  op.status = static_cast<uint8_t>(trace::OpStatus::kComplete);
  return op;
}

// Reading 1 takes the time inside other streams' ops as compute only where they may have
// run alongside: a collective whose communicator never showed it held the rank; one
// whose communicator showed it now and then, and send/recv (not measured), may not have.
TEST(OwnCompute, ReadingOneSubtractsOnlyCommunicatorsNeverSeenAlongside) {
  RankInfo rank;
  rank.rank = 0;
  // Stream 1: ops at [0,1000) and [10000,11000); stream 2 one op at [3000,7000) inside the gap.
  const int64_t gap = 10000 - 1000, inside = 4000;
  for (auto [k, kind, expect] :
       {std::tuple{Alongside::kHeld, trace::OpKind::kAllReduce, gap - inside},
        std::tuple{Alongside::kPossible, trace::OpKind::kAllReduce, gap},
        std::tuple{Alongside::kHeld, trace::OpKind::kSend, gap}}) {
    const std::vector<trace::OpRecord> ops = {timed_op(1, 0, 1, 0, 1000),
                                              timed_op(2, 0, 2, 3000, 7000, kind),
                                              timed_op(1, 1, 1, 10000, 11000)};
    const Alongside known = k;
    const OwnCompute own(rank, ops, [&](const trace::OpRecord& op) {
      return op.comm_id == 2 ? known : Alongside::kHeld;
    });
    ASSERT_TRUE(own.before(2).has_value());
    const ComputeReadings r = *own.before(2);
    EXPECT_EQ(r[0], gap - inside) << "held time is subtracted in reading 0";
    EXPECT_EQ(r[1], expect) << static_cast<int>(k) << " op " << static_cast<int>(kind);
    EXPECT_EQ(r[2], gap - inside);
  }
}

// An op that started the moment its stream freed was issued earlier (a bucket queued
// behind the one before): it says nothing of whether the op in flight on another stream
// held the rank.  One the rank started later, on a free stream, does.
TEST(OwnCompute, AnOpStartedWhenItsStreamFreedIsNoSignOfRunningAlongside) {
  RankInfo rank;
  rank.rank = 0;
  // Stream 1: A at [0,1ms).  Stream 2: B issued with A at [10us,0.3ms), then C from
  // c_start, 5 us or 200 us after B ended.
  for (auto [c_start, alongside] :
       {std::pair{int64_t{305'000}, false}, std::pair{int64_t{500'000}, true}}) {
    const std::vector<trace::OpRecord> ops = {timed_op(1, 0, 1, 0, 1'000'000),
                                              timed_op(2, 0, 2, 10'000, 300'000),
                                              timed_op(2, 1, 2, c_start, c_start + 200'000)};
    const OwnCompute own(rank, ops);
    EXPECT_EQ(own.started_another(0), alongside) << "C starts at " << c_start;
  }
}

// A gap is several stretches of compute when the rank started an op on another stream
// inside it (it issues ops between its kernels); not when the other op started right
// as the previous one on the stream ended, or right before this one.
TEST(OwnCompute, AGapWithAnotherOpStartedInsideIsSplit) {
  RankInfo rank;
  rank.rank = 0;
  // Stream 1: [0,1ms) and [10ms,11ms); stream 2: one op starting at `other`.
  for (auto [other, split] :
       {std::pair{int64_t{5'000'000}, true}, std::pair{int64_t{1'005'000}, false},
        std::pair{int64_t{9'990'000}, false}, std::pair{int64_t{12'000'000}, false}}) {
    const std::vector<trace::OpRecord> ops = {timed_op(1, 0, 1, 0, 1'000'000),
                                              timed_op(2, 0, 2, other, other + 100'000),
                                              timed_op(1, 1, 1, 10'000'000, 11'000'000)};
    const OwnCompute own(rank, ops);
    ASSERT_TRUE(own.before(2).has_value());
    EXPECT_EQ(own.split(2), split) << "other op at " << other;
  }
}

// A collective started back to back after a send/recv on its stream (the host issued
// both ahead of the GPU, as a pipeline's gradient all-reduces after its backward pass)
// is read as the rank's compute since it last left a collective that held it up, outside
// every op: the time inside the receive (waiting for a peer) is not the rank's.
TEST(OwnCompute, AnOpStartedBackToBackIsReadSinceTheLastCollectiveThatHeldTheRank) {
  RankInfo rank;
  rank.rank = 0;
  const auto recv = trace::OpKind::kRecv, send = trace::OpKind::kSend;
  // All-reduce [0,1ms); recv [3ms,5ms); send [6ms,7ms); all-reduce from 7ms + `after`.
  for (auto [after, since] :
       {std::pair{int64_t{5'000}, int64_t{3'000'000}}, std::pair{int64_t{500'000}, int64_t{0}}}) {
    const std::vector<trace::OpRecord> ops = {
        timed_op(1, 0, 1, 0, 1'000'000), timed_op(2, 0, 1, 3'000'000, 5'000'000, recv),
        timed_op(2, 1, 1, 6'000'000, 7'000'000, send),
        timed_op(1, 1, 1, 7'000'000 + after, 8'000'000 + after)};
    const OwnCompute own(rank, ops);
    ASSERT_TRUE(own.before(3).has_value());
    EXPECT_EQ(own.since_held(3), since > 0) << "after " << after;
    // Back to back: 2 ms before the recv, 1 ms before the send, and the 5 us.
    if (since > 0) {
      for (int64_t r : own.before(3).value_or(ComputeReadings{})) EXPECT_EQ(r, since + after);
    } else {
      EXPECT_EQ((*own.before(3))[0], after);
    }
  }
}

// Medians of sample deviations run lower over fewer members; in sigmas they compare.
TEST(SpreadScale, MedianSampleDeviationInSigmas) {
  EXPECT_NEAR(median_sd_in_sigmas(2), 0.674, 0.02);  // |N(0,1)|'s median
  EXPECT_NEAR(median_sd_in_sigmas(8), 0.953, 0.01);
  EXPECT_GT(median_sd_in_sigmas(64), median_sd_in_sigmas(8));
  EXPECT_LT(median_sd_in_sigmas(64), 1.0);
  EXPECT_EQ(bulk_members(2), 2);
  EXPECT_EQ(bulk_members(8), 7);
}

// How far past their mean the slowest of n members that vary alike is, in sigmas
// (tabulated expected maxima of standard normal samples).
TEST(SpreadScale, ExpectedSlowestOfNInSigmas) {
  EXPECT_EQ(expected_max_normal(1), 0.0);
  EXPECT_NEAR(expected_max_normal(2), 1 / std::sqrt(M_PI), 1e-4);
  EXPECT_NEAR(expected_max_normal(4), 1.0294, 1e-3);
  EXPECT_NEAR(expected_max_normal(8), 1.4236, 1e-3);
  EXPECT_NEAR(expected_max_normal(100), 2.5076, 2e-3);
  EXPECT_NEAR(expected_max_normal(1024), 3.2, 0.05);
}

// The lower tail's median over ops in sigmas: for two members |x1 - x2| / 2 over
// expected_max_normal(2), whose median is 0.6745 sqrt(2) / 2 / 0.5642; 0.80 for three
// (the mean of the two fastest less the fastest), near 1 for many.
TEST(SpreadScale, MedianLowerTailInSigmas) {
  EXPECT_EQ(median_lower_tail_in_sigmas(1), 1.0);
  EXPECT_NEAR(median_lower_tail_in_sigmas(2), 0.6745 * std::sqrt(2.0) / 2 / 0.5642, 0.02);
  for (int n : {3, 4, 8, 32, 256}) {
    EXPECT_GT(median_lower_tail_in_sigmas(n), 0.75) << n;
    EXPECT_LT(median_lower_tail_in_sigmas(n), 1.05) << n;
  }
  EXPECT_EQ(median_lower_tail_in_sigmas(1000), 1.0);
}

// After an op of a communicator that showed running alongside too rarely to tell, where
// the compute before the next op on its stream began is unknown: no reading.
TEST(OwnCompute, NoReadingAfterAnOpThatMayHaveRunAlongside) {
  RankInfo rank;
  rank.rank = 0;
  const std::vector<trace::OpRecord> ops = {timed_op(1, 0, 1, 0, 1000),
                                            timed_op(1, 1, 1, 5000, 6000)};
  for (auto [k, reading] :
       {std::pair{Alongside::kHeld, true}, std::pair{Alongside::kPossible, false},
        std::pair{Alongside::kLikely, false}}) {
    const OwnCompute own(rank, ops, [&](const trace::OpRecord&) { return k; });
    EXPECT_EQ(own.before(1).has_value(), reading) << static_cast<int>(k);
  }
}

TEST(LateEvidence, ClosedFormAndOneSided) {
  Lateness l;
  l.above = 10;
  l.below = 0;
  // Uniform mixture: 2^10 * 10! 0! / 11! = 1024 / 11.
  EXPECT_NEAR(l.late_evidence(), std::log(1024.0 / 11.0), 1e-9);
  l.above = 5;
  l.below = 5;
  EXPECT_EQ(l.late_evidence(), 0);
  l.above = 3;
  l.below = 7;
  EXPECT_EQ(l.late_evidence(), 0);
  Lateness more = l;
  more.above = 60;
  more.below = 40;
  Lateness fewer = l;
  fewer.above = 30;
  fewer.below = 20;
  EXPECT_GT(more.late_evidence(), fewer.late_evidence());
}

// Under the null (each op late with probability 1/2, independently) the evidence
// process is a nonnegative martingale of mean 1: the fraction of runs in which it
// ever reaches log(1/alpha) must not exceed alpha, whatever the run length.
TEST(LateEvidence, FalseAlarmRateIsBoundedByAlphaUnderTheNull) {
  std::mt19937_64 rng(12345);
  std::bernoulli_distribution coin(0.5);
  const double alpha = 0.05;
  const int runs = 4000, length = 400;
  int alarms = 0;
  for (int run = 0; run < runs; ++run) {
    Lateness l;
    for (int k = 0; k < length; ++k) {
      (coin(rng) ? l.above : l.below) += 1;
      if (l.late_evidence() >= std::log(1 / alpha)) {
        ++alarms;
        break;
      }
    }
  }
  EXPECT_LE(static_cast<double>(alarms) / runs, alpha);
  EXPECT_GT(alarms, 0);  // the bound is not vacuous: the test does fire by chance
}

TEST(LateEvidence, FindsAModestBiasQuickly) {
  std::mt19937_64 rng(7);
  std::bernoulli_distribution coin(0.75);
  Lateness l;
  int k = 0;
  while (l.late_evidence() < std::log(100 / 0.01) && k < 1000) {
    (coin(rng) ? l.above : l.below) += 1;
    ++k;
  }
  EXPECT_LT(k, 150);
}

class HealthyShapes : public ::testing::TestWithParam<std::tuple<int, int, int, int, int>> {};

TEST_P(HealthyShapes, NoFindingsOverSeeds) {
  const auto [ranks, nodes, tp, pp, steps] = GetParam();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    TempDir dir("healthy-shape");
    auto spec = small_spec(dir.path(), seed);
    spec.ranks = ranks;
    spec.nodes = nodes;
    spec.tp = tp;
    spec.pp = pp;
    spec.steps = steps;
    Report r = synth_and_analyze(spec);
    EXPECT_EQ(r.verdict, "healthy") << "seed " << seed;
    for (const auto& f : r.findings)
      ADD_FAILURE() << "seed " << seed << " " << f.kind << ": " << f.evidence;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HealthyShapes,
                         ::testing::Values(std::make_tuple(8, 2, 1, 1, 10),
                                           std::make_tuple(16, 4, 4, 1, 40),
                                           std::make_tuple(16, 4, 2, 2, 40),
                                           std::make_tuple(16, 2, 2, 1, 20)));

TEST(Sensitivity, FivePercentStragglerIn40Steps) {
  TempDir dir("s5");
  Report r = synth_and_analyze(small_spec(dir.path(), 3), {"straggler:rank=5,factor=1.05"});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "straggler");
  EXPECT_EQ(r.findings[0].ranks, Ranks{5});
}

TEST(Sensitivity, TwentyPercentStragglerIn10Steps) {
  TempDir dir("s20");
  auto spec = small_spec(dir.path(), 2);
  spec.steps = 10;
  Report r = synth_and_analyze(spec, {"straggler:rank=2,factor=1.2"});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].ranks, Ranks{2});
}

TEST(Sensitivity, TwoStragglersAtOnce) {
  TempDir dir("two");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  Report r =
      synth_and_analyze(spec, {"straggler:rank=3,factor=1.1", "straggler:rank=12,factor=1.05"});
  ASSERT_EQ(r.findings.size(), 2u);
  Ranks got;
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.kind, "straggler");
    EXPECT_EQ(f.subkind, "gpu");
    got.insert(got.end(), f.ranks.begin(), f.ranks.end());
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (Ranks{3, 12}));
}

// Every rank of node2 30% slower; its tensor-parallel group is the node itself, so
// inside it nobody is late: only the ops shared with other nodes show it.
TEST(NodeRule, SlowNodeIsANodeStragglerNotImbalanceOrLink) {
  TempDir dir("slow-node");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 4;
  Report r =
      synth_and_analyze(spec, {"straggler:rank=4,factor=1.3", "straggler:rank=5,factor=1.3",
                               "straggler:rank=6,factor=1.3", "straggler:rank=7,factor=1.3"});
  ASSERT_EQ(r.findings.size(), 1u) << r.findings[0].kind << "/" << r.findings[0].subkind;
  EXPECT_EQ(r.findings[0].kind, "straggler");
  EXPECT_EQ(r.findings[0].subkind, "node");
  EXPECT_EQ(r.findings[0].nodes, Nodes{"node2"});
  EXPECT_EQ(r.findings[0].ranks, (Ranks{4, 5, 6, 7}));
  // What-if: never more than the time lost (the job cannot run faster than its compute).
  EXPECT_GE(r.what_if.ideal_s, 0.9 * spec.compute_ms * spec.steps / 1000);
}

// A heavier data-parallel replica that is not a whole node: structural imbalance
// naming the replica, with advice for replicas, not pipeline stages.
TEST(ReplicaImbalance, HeavierReplicaIsStructuralWithReplicaAdvice) {
  TempDir dir("replica");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  Report r =
      synth_and_analyze(spec, {"straggler:rank=4,factor=1.2", "straggler:rank=5,factor=1.2"});
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, "imbalance");
  EXPECT_EQ(f.subkind, "structural");
  EXPECT_EQ(f.ranks, (Ranks{4, 5}));
  EXPECT_EQ(f.extra["structure"], "dp_replica");
  EXPECT_EQ(f.extra["replica"], 2);
  EXPECT_EQ(f.evidence.find("stage"), std::string::npos) << f.evidence;
}

// Hybrid jobs whose gradient buckets run alongside the backward pass (unique-id
// communicators): the victims of a slow rank, and the ranks of a heavier pipeline stage
// that is late only against the other stage, are never stragglers of their own.
synth::SynthSpec overlapped_hybrid(const std::string& dir, uint64_t seed, int ranks, int nodes) {
  auto spec = small_spec(dir, seed);
  spec.ranks = ranks;
  spec.nodes = nodes;
  spec.tp = 2;
  spec.pp = 2;
  spec.unique_ids = true;
  spec.overlap = true;
  spec.inter_gbps = 6;  // buckets as long as the compute they overlap
  return spec;
}

TEST(Overlap, VictimsOfAThrottledRankAcrossThePipelineAreNotStragglers) {
  for (uint64_t seed : {1, 2, 3}) {
    TempDir dir("overlap-throttle");
    Report r = synth_and_analyze(overlapped_hybrid(dir.path(), seed, 8, 2), {"throttle:rank=2"});
    for (const auto& f : r.findings) {
      EXPECT_EQ(f.ranks, Ranks{2}) << "seed " << seed << " " << f.kind << ": " << f.evidence;
    }
    EXPECT_NE(find_kind(r, "straggler", "gpu"), nullptr) << "seed " << seed;
  }
}

TEST(Overlap, TwoStragglersLeaveTheirTensorParallelPartnersAlone) {
  TempDir dir("overlap-two");
  Report r = synth_and_analyze(overlapped_hybrid(dir.path(), 1, 8, 2),
                               {"straggler:rank=5,factor=1.1", "straggler:rank=2,factor=1.05"});
  Ranks got;
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.kind + "/" + f.subkind, "straggler/gpu") << f.evidence;
    got.insert(got.end(), f.ranks.begin(), f.ranks.end());
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (Ranks{2, 5}));
}

TEST(Overlap, RanksOfAHeavierStageAreNotStragglersOfTheirOwn) {
  for (uint64_t seed : {1, 2, 3}) {
    TempDir dir("overlap-stage");
    auto spec = overlapped_hybrid(dir.path(), seed, 16, 4);
    spec.comm_streams = true;
    Report r = synth_and_analyze(spec, {"heavy_stage:stage=1,factor=1.3"});
    for (const auto& f : r.findings) {
      EXPECT_EQ(f.kind + "/" + f.subkind, "imbalance/structural")
          << "seed " << seed << " ranks " << f.ranks.size() << ": " << f.evidence;
    }
    // Late only against the other stage (in the world all-reduce), some of its ranks
    // more than others: the stage is found whole, from compute time.
    const Finding* f = find_kind(r, "imbalance", "structural");
    ASSERT_NE(f, nullptr) << "seed " << seed;
    EXPECT_EQ(f->ranks, (Ranks{8, 9, 10, 11, 12, 13, 14, 15})) << "seed " << seed;
  }
}

TEST(ReplicaImbalance, DataDependentAcrossReplicasHasNoCulprit) {
  TempDir dir("data-replica");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  Report r = synth_and_analyze(spec, {"imbalance:amount=0.5"});
  EXPECT_EQ(find_kind(r, "straggler"), nullptr);
  EXPECT_NE(find_kind(r, "imbalance", "data_dependent"), nullptr);
}

TEST(WhatIf, SlowLinkSavingsStayWithinTheTimeInsideCommunication) {
  TempDir dir("whatif-link");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.pp = 4;
  Report r = synth_and_analyze(spec, {"slow_nic:node=node2,factor=20"});
  ASSERT_NE(find_kind(r, "slow_link", "nic"), nullptr);
  EXPECT_LT(r.what_if.ideal_s, r.what_if.actual_s);
  EXPECT_GE(r.what_if.ideal_s, 0.9 * spec.compute_ms * spec.steps / 1000);
}

}  // namespace
}  // namespace ringside::analysis::test
