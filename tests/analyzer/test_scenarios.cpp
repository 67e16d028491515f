// Synth-based scenarios: one per fault kind, asserting the verdict, the
// finding kind and the exact ranks / nodes / comm / seq; healthy seeds give
// no finding; a 1024-rank job with 50 ms node clock offsets finds the same culprits.
#include <gtest/gtest.h>

#include <set>

#include "match/comm_roles.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

using Ranks = std::vector<int64_t>;
using Nodes = std::vector<std::string>;

class Healthy : public ::testing::TestWithParam<uint64_t> {};

TEST_P(Healthy, NoFindings) {
  TempDir dir("healthy");
  Report r = synth_and_analyze(small_spec(dir.path(), GetParam()));
  EXPECT_EQ(r.verdict, "healthy");
  for (const auto& f : r.findings) ADD_FAILURE() << f.kind << ": " << f.evidence;
  EXPECT_EQ(exit_code(r), 0);
}

TEST_P(Healthy, NoFindingsWithTensorAndPipelineParallel) {
  TempDir dir("healthy-3d");
  auto spec = small_spec(dir.path(), GetParam());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  spec.pp = 2;
  Report r = synth_and_analyze(spec);
  EXPECT_EQ(r.verdict, "healthy");
  for (const auto& f : r.findings) ADD_FAILURE() << f.kind << ": " << f.evidence;
}

INSTANTIATE_TEST_SUITE_P(Seeds, Healthy, ::testing::Values(1, 2, 3));

TEST(Scenario, StragglerGpu) {
  TempDir dir("straggler");
  Report r = synth_and_analyze(small_spec(dir.path()), {"straggler:rank=5,factor=1.2"});
  EXPECT_EQ(r.verdict, "degraded");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "straggler");
  EXPECT_EQ(r.findings[0].ranks, Ranks{5});
  EXPECT_EQ(r.findings[0].nodes, Nodes{"node2"});
  EXPECT_EQ(r.findings[0].extra["cause"], "unknown");
  ASSERT_FALSE(r.what_if.per_rank.empty());
  EXPECT_EQ(r.what_if.per_rank[0].rank, 5);
  EXPECT_LT(r.what_if.ideal_s, r.what_if.actual_s);
}

TEST(Scenario, ThrottledGpuIsAttributedToThrottling) {
  TempDir dir("throttle");
  Report r = synth_and_analyze(small_spec(dir.path()), {"throttle:rank=3,factor=1.3"});
  const Finding* s = find_kind(r, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, Ranks{3});
  EXPECT_EQ(s->extra["cause"], "throttling");
  const Finding* g = find_kind(r, "gpu_health", "throttling");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->ranks, Ranks{3});
  EXPECT_EQ(r.findings[0].kind, "straggler");  // ranked by cost
}

TEST(Scenario, DataDependentImbalanceIsNotAStraggler) {
  TempDir dir("imbalance");
  Report r = synth_and_analyze(small_spec(dir.path()), {"imbalance:amount=0.5"});
  EXPECT_EQ(find_kind(r, "straggler"), nullptr);
  const Finding* f = find_kind(r, "imbalance", "data_dependent");
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->ranks.size(), 3u);
}

// Every rank's compute varies by 4% from step to step on its own, tensor-parallel peers
// (who share their data) as much as any: over 64 ranks the slowest of a data-parallel
// group costs the others 8% of the job, yet that is the ranks' noise, not data that
// differs.  The same noise beside replicas whose batches differ is still data-dependent
// imbalance.  Long steps: every spread is far beyond imbalance_min_sd_ns.
TEST(Scenario, NoiseOfEveryRankIsNotDataDependentImbalanceHoweverManyRanksWait) {
  for (const char* fault : {"", "imbalance:amount=0.2"}) {
    for (uint64_t seed : {1, 2}) {
      TempDir dir("rank-noise");
      auto spec = small_spec(dir.path(), seed);
      spec.ranks = 64;
      spec.nodes = 8;
      spec.tp = 4;
      spec.jitter = 0.04;
      spec.steps = 60;
      spec.compute_ms = 3500;
      Report r = synth_and_analyze(
          spec, *fault ? std::vector<std::string>{fault} : std::vector<std::string>{});
      SCOPED_TRACE(std::string(*fault ? fault : "healthy") + " seed " + std::to_string(seed));
      if (*fault) {
        EXPECT_NE(find_kind(r, "imbalance", "data_dependent"), nullptr);
      } else {
        for (const auto& f : r.findings)
          ADD_FAILURE() << f.kind << "/" << f.subkind << ": " << f.evidence;
      }
    }
  }
}

// Replicas whose batches differ, on hosts that now and then hold up a stretch of compute
// (3% of them, by 30-100%: a thread waiting for a CPU, a pause): the waits those delays
// cause are not the data's.  What the imbalance costs is what its usual spread costs in
// every op, about the same with or without the delays (6-9% more with them; 21-40% more
// when every wait was counted).
TEST(Scenario, HostDelaysNowAndThenAreNotCountedAsTheDataImbalancesCost) {
  for (uint64_t seed : {1, 2}) {
    double cost[2] = {0, 0};
    for (const double hiccups : {0.0, 0.03}) {
      TempDir dir("imbalance-hiccups");
      auto spec = small_spec(dir.path(), seed);
      spec.ranks = 16;
      spec.nodes = 4;
      spec.tp = 2;
      spec.hiccups = hiccups;
      Report r = synth_and_analyze(spec, {"imbalance:amount=0.2"});
      SCOPED_TRACE("seed " + std::to_string(seed) + " hiccups " + std::to_string(hiccups));
      const Finding* f = find_kind(r, "imbalance", "data_dependent");
      ASSERT_NE(f, nullptr);
      cost[hiccups > 0] = f->cost_s;
    }
    EXPECT_LT(cost[1], 1.15 * cost[0]) << "seed " << seed;
  }
}

// 16 ranks on 4 nodes, tensor x 2 pipeline stages x data parallel, communicators from
// unique ids, 40 steps.
synth::SynthSpec hybrid_spec(const std::string& dir, uint64_t seed, int tp) {
  auto spec = small_spec(dir, seed);
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = tp;
  spec.pp = 2;
  spec.unique_ids = true;
  spec.steps = 40;
  return spec;
}

// Gradient buckets in flight while the backward pass goes on, as long as the compute
// they overlap (so they meet the tensor-parallel all-reduces), with per-peer transfers.
void overlap_buckets(synth::SynthSpec& spec) {
  spec.overlap = true;
  spec.inter_gbps = 6;
  spec.links = true;
}

// A long sample now and then on a different rank: most ops of every communicator are
// quiet, so the spread is seen op by op, and the cost is what everyone waited.
TEST(Scenario, LongSamplesOnChangingRanksAreDataDependentImbalance) {
  for (uint64_t seed : {1, 2, 3}) {
    TempDir dir("long-samples");
    auto spec = hybrid_spec(dir.path(), seed, 2);
    Report r = synth_and_analyze(spec, {"heavy_sample:factor=1.5"});
    ASSERT_EQ(r.findings.size(), 1u) << "seed " << seed;
    const Finding& f = r.findings[0];
    EXPECT_EQ(f.kind, "imbalance");
    EXPECT_EQ(f.subkind, "data_dependent");
    EXPECT_GT(f.extra.value("outlier_ops", 0), 0) << f.evidence;
    EXPECT_GE(f.ranks.size(), 3u);
    EXPECT_GE(f.cost_s, 0.05 * r.what_if.actual_s) << f.evidence;
  }
}

// Long samples drawn on a random rank each step fall on one rank a few times, now and
// then in steps in a row, and with buckets overlapping the backward pass only some of
// them stand out.  Each long sample makes outlier ops of every op of its step: they are
// one draw of chance, not many, and the rank is not slow now and then.
TEST(Scenario, LongSamplesThatFellOnOneRankSeveralTimesAreNotItsOwn) {
  struct Case {
    uint64_t seed;
    int pp;
    bool comm_streams;
  };
  for (const Case& c : {Case{1003, 1, false}, Case{3001, 2, true}}) {
    TempDir dir("long-samples-overlap");
    auto spec = hybrid_spec(dir.path(), c.seed, 2);
    spec.pp = c.pp;
    spec.comm_streams = c.comm_streams;
    overlap_buckets(spec);
    Report r = synth_and_analyze(spec, {"heavy_sample:factor=1.5"});
    EXPECT_EQ(find_kind(r, "straggler"), nullptr)
        << "seed " << c.seed << ": " << r.findings.front().evidence;
    for (const auto& f : r.findings) EXPECT_EQ(f.subkind, "data_dependent") << f.evidence;
  }
}

// A host that now and then holds one compute chunk of some rank up (30-100% longer,
// once): each is an outlier op alone, not a run of them as more work makes, so no
// finding; the same ranks with long samples are still found.
// The same uneven compute on hosts whose threads waited for a CPU as long as the
// ranks waited for each other: the work is not known to differ, and the report
// says why it was not judged.
TEST(Scenario, UnevenComputeOnAnOversubscribedHostIsNotDataDependentImbalance) {
  for (double host_wait : {0.0, 0.6}) {
    TempDir dir("oversubscribed");
    auto spec = small_spec(dir.path());
    spec.host_wait = host_wait;
    Report r = synth_and_analyze(spec, {"imbalance:amount=0.5"});
    bool warned = false;
    for (const auto& w : r.warnings) warned = warned || w.find("short of CPU") != std::string::npos;
    if (host_wait == 0) {
      EXPECT_NE(find_kind(r, "imbalance", "data_dependent"), nullptr);
      EXPECT_FALSE(warned);
    } else {
      EXPECT_EQ(find_kind(r, "imbalance", "data_dependent"), nullptr);
      EXPECT_TRUE(warned);
      EXPECT_NEAR(r.extra.value("host_cpu_wait_s", 0.0), host_wait * r.what_if.actual_s,
                  0.5 * r.what_if.actual_s);
    }
  }
}

TEST(Scenario, HostDelaysAreNotImbalance) {
  for (uint64_t seed : {1, 2, 3}) {
    for (int tp : {1, 2}) {
      TempDir dir("hiccups");
      auto spec = hybrid_spec(dir.path(), seed, tp);
      spec.hiccups = 0.01;
      Report r = synth_and_analyze(spec);
      for (const auto& f : r.findings) {
        ADD_FAILURE() << "seed " << seed << " tp " << tp << " " << f.kind << "/" << f.subkind
                      << ": " << f.evidence;
      }
    }
  }
}

// Synthesizes `spec` with the fault `fault` ("": none) and analyzes it: the fault is found
// as data-dependent imbalance; a job without one gets no finding at all.
void expect_data_dependent_only_with(const synth::SynthSpec& spec, const char* fault) {
  Report r = synth_and_analyze(
      spec, *fault ? std::vector<std::string>{fault} : std::vector<std::string>{});
  if (*fault) {
    EXPECT_NE(find_kind(r, "imbalance", "data_dependent"), nullptr);
  } else {
    for (const auto& f : r.findings)
      ADD_FAILURE() << f.kind << "/" << f.subkind << ": " << f.evidence;
  }
}

// Many ranks in one communicator: with 3% of the stretches held up, most ops have two or
// more members delayed, so even a spread without the slowest holds delays in most ops,
// and 128 or 256 data-parallel ranks were reported as data-dependent imbalance (10-15%
// of the job).  A delay only lengthens a stretch: the lower tail does not move, while
// replicas whose batches differ are still found.
TEST(Scenario, HostDelaysOnManyRanksAreNotDataDependentImbalance) {
  struct Shape {
    int ranks, nodes, tp;
  };
  for (const Shape& shape : {Shape{128, 16, 1}, Shape{256, 32, 8}}) {
    for (const char* fault : {"", "imbalance:amount=0.2"}) {
      TempDir dir("hiccups-many");
      auto spec = small_spec(dir.path(), 1);
      spec.ranks = shape.ranks;
      spec.nodes = shape.nodes;
      spec.tp = shape.tp;
      spec.hiccups = 0.03;
      SCOPED_TRACE(std::to_string(shape.ranks) + " ranks tp " + std::to_string(shape.tp) + " " +
                   (*fault ? fault : "healthy"));
      expect_data_dependent_only_with(spec, fault);
    }
  }
}

// Gradient buckets overlapped with the backward pass, as DDP and FSDP run them: the gap
// before a bucket holds many stretches of compute (and the tensor-parallel ops between
// them), and a bucket queued behind the last starts when its stream frees, so a member
// delayed once stays behind at every bucket until the step ends.  Delays of the host in
// 1% or 3% of the stretches are still no finding, with one communicator of 8 or 16, or
// with tensor-parallel pairs beside two of 8.
TEST(Scenario, HostDelaysWithOverlappedBucketsAreNotImbalance) {
  struct Shape {
    int ranks, nodes, tp;
  };
  for (const Shape& shape : {Shape{8, 2, 1}, Shape{16, 4, 1}, Shape{16, 4, 2}}) {
    for (double hiccups : {0.01, 0.03}) {
      for (uint64_t seed : {1, 2}) {
        TempDir dir("hiccups-overlap");
        auto spec = small_spec(dir.path(), seed);
        spec.ranks = shape.ranks;
        spec.nodes = shape.nodes;
        spec.tp = shape.tp;
        spec.unique_ids = true;
        spec.steps = 40;
        spec.overlap = true;
        spec.inter_gbps = 6;
        spec.hiccups = hiccups;
        Report r = synth_and_analyze(spec);
        for (const auto& f : r.findings) {
          ADD_FAILURE() << shape.ranks << " ranks tp " << shape.tp << " hiccups " << hiccups
                        << " seed " << seed << ": " << f.kind << "/" << f.subkind << " "
                        << f.evidence;
        }
      }
    }
  }
}

// Pipeline stages with buckets on streams of their own: a data-parallel group's bucket is
// computed over a longer stretch than a tensor-parallel op (10-12 ms against 6), so its
// members spread twice as far in ns though no further relative to the stretch, and the
// quietest of eight tensor-parallel pairs is below their median by chance. Judged in ns
// against the quietest pair, 3% or 5% of the stretches held up made that spread pass for
// data that varies (3 of 8 runs). Replicas whose batches differ are still found.
TEST(Scenario, HostDelaysBesidePipelineStagesAndBucketStreamsAreNotDataDependentImbalance) {
  struct Case {
    double hiccups;
    uint64_t seed;
    const char* fault;
  };
  for (const Case& c : {Case{0.03, 4, ""}, Case{0.05, 1, ""}, Case{0.05, 4, ""},
                        Case{0, 1, "imbalance:amount=0.5"}, Case{0, 2, "imbalance:amount=0.5"}}) {
    TempDir dir("hiccups-pp-streams");
    auto spec = hybrid_spec(dir.path(), c.seed, 2);
    spec.comm_streams = true;
    overlap_buckets(spec);
    spec.hiccups = c.hiccups;
    SCOPED_TRACE("hiccups " + std::to_string(c.hiccups) + " seed " + std::to_string(c.seed) + " " +
                 (*c.fault ? c.fault : "healthy"));
    expect_data_dependent_only_with(spec, c.fault);
  }
}

// The one finding of `r` names `rank` as slow now and then.
void expect_intermittent(const Report& r, int64_t rank, uint64_t seed) {
  ASSERT_EQ(r.findings.size(), 1u) << "seed " << seed;
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, "straggler") << f.evidence;
  EXPECT_EQ(f.subkind, "intermittent") << f.evidence;
  EXPECT_EQ(f.ranks, Ranks{rank});
}

// The same rank, slow in one step in five: not data (it has an owner) and not late in
// most ops (no straggler by the sign test), but a rank that is slow now and then.
TEST(Scenario, OneRankSlowNowAndThenIsAnIntermittentStraggler) {
  for (uint64_t seed : {1, 2, 3}) {
    TempDir dir("intermittent");
    auto spec = hybrid_spec(dir.path(), seed, 2);
    Report r = synth_and_analyze(spec, {"heavy_sample:factor=1.5,rank=6,every=5"});
    expect_intermittent(r, 6, seed);
    if (!r.findings.empty()) {
      EXPECT_EQ(r.findings[0].nodes, Nodes{"node2"});
    }
  }
}

// On a host whose ranks all waited for a CPU longer than the job waited for the rank
// slow now and then, its delays are not known to be its own: no finding, and the
// warning says why.  A short wait leaves the finding as it was.
TEST(Scenario, ARankSlowNowAndThenOnAnOversubscribedHostIsNotJudged) {
  for (double host_wait : {0.002, 0.6}) {
    TempDir dir("intermittent-oversubscribed");
    auto spec = hybrid_spec(dir.path(), 1, 2);
    spec.host_wait = host_wait;
    Report r = synth_and_analyze(spec, {"heavy_sample:factor=1.5,rank=6,every=5"});
    bool warned = false;
    for (const auto& w : r.warnings)
      warned = warned || w.find("nor a rank slow now and then") != std::string::npos;
    if (host_wait < 0.01) {
      expect_intermittent(r, 6, 1);
      EXPECT_FALSE(warned);
    } else {
      EXPECT_TRUE(r.findings.empty()) << r.findings[0].evidence;
      EXPECT_TRUE(warned);
    }
  }
}

// ... also where only the first bucket of a step shows how long the ranks computed (the
// others start as their stream frees): one outlier op per slow step, never a run, but
// always the same rank's.
TEST(Scenario, OneRankSlowNowAndThenBehindQueuedBuckets) {
  for (uint64_t seed : {1, 2}) {
    TempDir dir("intermittent-overlap");
    auto spec = small_spec(dir.path(), seed);
    spec.overlap = true;
    spec.inter_gbps = 6;
    expect_intermittent(synth_and_analyze(spec, {"heavy_sample:factor=2,rank=5,every=5"}), 5, seed);
  }
}

TEST(Scenario, HeavyPipelineStageIsStructuralImbalance) {
  TempDir dir("heavy-stage");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 2;
  spec.tp = 2;
  spec.pp = 2;
  Report r = synth_and_analyze(spec, {"heavy_stage:stage=1,factor=1.3"});
  EXPECT_EQ(find_kind(r, "straggler"), nullptr);
  const Finding* f = find_kind(r, "imbalance", "structural");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, (Ranks{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(f->extra["stage"], 1);
}

// With buckets in flight on a stream of their own, a rank that waited in its
// tensor-parallel all-reduces for a slow partner arrives late at its data-parallel
// all-reduces: it lags behind, measured from where the bucket before ended.  The
// partner waited; only the slow GPU is named, not the pair as one that gets more work.
TEST(Scenario, TheTensorParallelPartnerOfAStragglerIsNotLateWithIt) {
  for (uint64_t seed : {3001, 3002}) {
    TempDir dir("partner");
    auto spec = small_spec(dir.path(), seed);
    spec.tp = 2;
    spec.pp = 2;
    spec.unique_ids = true;
    overlap_buckets(spec);
    Report r =
        synth_and_analyze(spec, {"straggler:rank=5,factor=1.1", "straggler:rank=2,factor=1.05"});
    std::set<int64_t> named;
    for (const auto& f : r.findings) {
      EXPECT_EQ(f.kind + "/" + f.subkind, "straggler/gpu") << "seed " << seed << ": " << f.evidence;
      named.insert(f.ranks.begin(), f.ranks.end());
    }
    EXPECT_EQ(named, (std::set<int64_t>{2, 5})) << "seed " << seed;
  }
}

// A heavy stage whose ranks, late only against the other stage, include all of one
// node: the node is part of the stage, not a straggler of its own.
TEST(Scenario, TheNodesOfAHeavyStageAreNoStragglers) {
  for (uint64_t seed : {3002, 3003}) {
    TempDir dir("heavy-stage-nodes");
    auto spec = hybrid_spec(dir.path(), seed, 2);
    spec.comm_streams = true;
    overlap_buckets(spec);
    Report r = synth_and_analyze(spec, {"heavy_stage:stage=1,factor=1.3"});
    ASSERT_EQ(r.findings.size(), 1u) << "seed " << seed << ": " << r.findings.back().evidence;
    EXPECT_EQ(r.findings[0].kind + "/" + r.findings[0].subkind, "imbalance/structural");
    EXPECT_EQ(r.findings[0].ranks, (Ranks{8, 9, 10, 11, 12, 13, 14, 15}));
  }
}

TEST(Scenario, SlowNicOnOneNode) {
  TempDir dir("slow-nic");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.pp = 4;
  Report r = synth_and_analyze(spec, {"slow_nic:node=node2,factor=4"});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "slow_link");
  EXPECT_EQ(r.findings[0].subkind, "nic");
  EXPECT_EQ(r.findings[0].nodes, Nodes{"node2"});
  EXPECT_EQ(r.findings[0].ranks, (Ranks{4, 5, 6, 7}));
}

TEST(Scenario, SlowNodePair) {
  TempDir dir("slow-pair");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.pp = 4;
  Report r = synth_and_analyze(spec, {"slow_pair:a=node2,b=node3,factor=4"});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "slow_link");
  EXPECT_EQ(r.findings[0].subkind, "node_pair");
  EXPECT_EQ(r.findings[0].nodes, (Nodes{"node2", "node3"}));
}

// A data-parallel job has no send/recv to time: its links are seen only through the
// profiler plugin's rows (`synth --links` writes them as the probe does).
TEST(Scenario, SlowNicOrPairOfADataParallelJobIsNamedFromTheLinkRows) {
  struct Case {
    const char* fault;
    const char* subkind;
    Nodes nodes;
  };
  for (const Case& c :
       {Case{"slow_nic:node=node2,factor=4", "nic", {"node2"}},
        Case{"slow_pair:a=node2,b=node3,factor=4", "node_pair", {"node2", "node3"}}}) {
    for (bool links : {false, true}) {
      TempDir dir("dp-links");
      auto spec = small_spec(dir.path());
      spec.ranks = 16;
      spec.nodes = 4;
      spec.links = links;
      Report r = synth_and_analyze(spec, {c.fault});
      if (!links) {
        EXPECT_EQ(find_kind(r, "slow_link"), nullptr) << c.fault << ": no link was observed";
        continue;
      }
      ASSERT_EQ(r.findings.size(), 1u) << c.fault;
      EXPECT_EQ(r.findings[0].kind, "slow_link");
      EXPECT_EQ(r.findings[0].subkind, c.subkind);
      EXPECT_EQ(r.findings[0].nodes, c.nodes);
    }
  }
}

// The first and the last stage's nodes are seen only with the one next to them: a slow
// path there fits the pair and one end's NIC equally.  The pair is named, with the doubt
// said; the NIC that fits as well comes before the pair in the candidates for the first
// nodes, after it for the last.
TEST(Scenario, SlowNodePairAtAnEndOfThePipelineIsNamedWithTheDoubt) {
  for (const Nodes& pair : {Nodes{"node1", "node2"}, Nodes{"node3", "node4"}}) {
    TempDir dir("slow-end-pair");
    auto spec = small_spec(dir.path());
    spec.ranks = 16;
    spec.nodes = 4;
    spec.pp = 4;
    Report r = synth_and_analyze(spec, {"slow_pair:a=" + pair[0] + ",b=" + pair[1] + ",factor=4"});
    ASSERT_EQ(r.findings.size(), 1u) << pair[0];
    EXPECT_EQ(r.findings[0].kind, "slow_link");
    EXPECT_EQ(r.findings[0].subkind, "node_pair");
    EXPECT_EQ(r.findings[0].nodes, pair);
    EXPECT_DOUBLE_EQ(r.findings[0].confidence, 0.6);
    EXPECT_NE(r.findings[0].evidence.find("cannot be excluded"), std::string::npos);
  }
}

// One send/recv pair slow while the other transfers between the same two nodes are
// normal: no node or node pair explains it (it is how a descheduled rank looks on a
// busy host), so no slow_link finding.
TEST(Scenario, OneSlowSendRecvPairAmongNormalOnesIsNotALink) {
  TempDir dir("slow-p2p");
  auto spec = small_spec(dir.path());  // 8 ranks on 2 nodes
  spec.pp = 2;  // stage 0 on node1, stage 1 on node2: every send/recv crosses them
  Report r = synth_and_analyze(spec, {"slow_p2p:rank=3,peer=7,factor=4"});
  const Finding* f = find_kind(r, "slow_link");
  EXPECT_EQ(f, nullptr) << f->evidence;
}

void expect_hang(const Report& r, const std::string& kind, const std::string& subkind, Ranks ranks,
                 uint64_t seq) {
  EXPECT_EQ(r.verdict, "hung");
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, kind);
  EXPECT_EQ(f.subkind, subkind);
  EXPECT_EQ(f.ranks, ranks);
  EXPECT_EQ(f.comm_label, "world");
  ASSERT_TRUE(f.seq.has_value());
  EXPECT_EQ(*f.seq, seq);
  EXPECT_EQ(exit_code(r), 1);
}

TEST(Scenario, RankStopsBeforeOpN) {
  TempDir dir("stop");
  Report r = synth_and_analyze(small_spec(dir.path()), {"stop:rank=2,op=57"});
  expect_hang(r, "hang", "missing_rank", {2}, 57);
  EXPECT_EQ(r.findings[0].nodes, Nodes{"node1"});
}

TEST(Scenario, AllStuck) {
  TempDir dir("all-stuck");
  Report r = synth_and_analyze(small_spec(dir.path()), {"all_stuck:op=100"});
  expect_hang(r, "hang", "all_stuck", {0, 1, 2, 3, 4, 5, 6, 7}, 100);
  EXPECT_EQ(r.findings[0].nodes, (Nodes{"node1", "node2"}));
}

TEST(Scenario, GpuStall) {
  TempDir dir("stall");
  Report r = synth_and_analyze(small_spec(dir.path()), {"stall:rank=6,op=30"});
  expect_hang(r, "hang", "gpu_stall", {6}, 30);
}

TEST(Scenario, Desync) {
  TempDir dir("desync");
  Report r = synth_and_analyze(small_spec(dir.path()), {"desync:rank=1,op=30"});
  expect_hang(r, "desync", "", {1}, 30);
  EXPECT_EQ(find_kind(r, "hang"), nullptr);  // explained by the desync
}

TEST(Scenario, CrashIsDeadRank) {
  TempDir dir("crash");
  Report r = synth_and_analyze(small_spec(dir.path()), {"crash:rank=4,op=30"});
  expect_hang(r, "hang", "dead_rank", {4}, 30);
}

TEST(Scenario, MissingTraceFile) {
  TempDir dir("missing");
  Report r = synth_and_analyze(small_spec(dir.path()), {"missing:rank=7"});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "missing_trace");
  EXPECT_EQ(r.findings[0].ranks, Ranks{7});
  EXPECT_EQ(r.missing_ranks, Ranks{7});
}

TEST(Scenario, MissingRankThatOthersWaitFor) {
  TempDir dir("missing-hang");
  Report r = synth_and_analyze(small_spec(dir.path()), {"missing:rank=3", "stop:rank=3,op=20"});
  expect_hang(r, "hang", "missing_rank", {3}, 20);
  EXPECT_NE(find_kind(r, "missing_trace"), nullptr);
}

// Hybrid TP x PP x DP shapes: the root is the one finding, every other rank is
// folded under it as a consequence, and nothing blames a healthy rank.
struct HybridHang {
  const char* name;
  const char* fault;
  const char* kind;
  const char* subkind;
  Ranks ranks;
};

class HybridHangs : public ::testing::TestWithParam<HybridHang> {};

TEST_P(HybridHangs, OneRootWithEveryVictimFolded) {
  const HybridHang& c = GetParam();
  TempDir dir("hybrid-hang");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  spec.pp = 2;
  spec.steps = 20;
  Report r = synth_and_analyze(spec, {c.fault});
  EXPECT_EQ(r.verdict, "hung");
  ASSERT_EQ(r.findings.size(), 1u) << r.findings.back().kind << " " << r.findings.back().evidence;
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.kind, c.kind);
  EXPECT_EQ(f.subkind, c.subkind);
  EXPECT_EQ(f.ranks, c.ranks);
  std::set<int64_t> folded;
  for (const auto& q : f.consequences) folded.insert(q.ranks.begin(), q.ranks.end());
  for (int64_t x : f.ranks) EXPECT_EQ(folded.count(x), 0u) << "a culprit is not its own victim";
  if (f.subkind != "all_stuck") {
    EXPECT_EQ(folded.size() + f.ranks.size(), 16u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, HybridHangs,
    ::testing::Values(HybridHang{"Stop", "stop:rank=5,op=10", "hang", "missing_rank", {5}},
                      HybridHang{"Crash", "crash:rank=9,op=10", "hang", "dead_rank", {9}},
                      HybridHang{"Stall", "stall:rank=14,op=10", "hang", "gpu_stall", {14}},
                      HybridHang{"Desync", "desync:rank=3,op=10", "desync", "", {3}},
                      HybridHang{"AllStuck",
                                 "all_stuck:op=10",
                                 "hang",
                                 "all_stuck",
                                 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}),
    [](const ::testing::TestParamInfo<HybridHang>& p) { return std::string(p.param.name); });

TEST(Roles, HybridCommunicatorsAreNamedByRoleAndMembers) {
  TempDir dir("roles");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  spec.pp = 2;
  spec.steps = 20;
  Report r = synth_and_analyze(spec, {"stop:rank=5,op=10"});
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].comm_role, "world");
  std::set<std::string> labels;
  for (const auto& q : r.findings[0].consequences) labels.insert(q.comm_label);
  EXPECT_TRUE(labels.count("world")) << ::testing::PrintToString(labels);
}

TEST(Roles, MemberListsAreCompact) {
  EXPECT_EQ(member_list({4, 5}), "[4,5]");
  EXPECT_EQ(member_list({3, 0, 1, 2}), "[0-3]");
  EXPECT_EQ(member_list({1, 3, 5, 7}), "{1,3,5,7}");
  EXPECT_EQ(member_list({0, -1}), "{0,?}");
  EXPECT_EQ(member_list({0, 2, 4, 6, 8, 10, 12, 14, 16, 18}),
            "{0,2,4,6,8,10,12,14,...} (10 ranks)");
}

TEST(Scenario, XidAndEccAreGpuHealth) {
  TempDir dir("xid");
  Report r = synth_and_analyze(small_spec(dir.path()),
                               {"xid:rank=3,code=79,step=10", "ecc:rank=5,step=3"});
  const Finding* x = find_kind(r, "gpu_health", "xid");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->ranks, Ranks{3});
  const Finding* e = find_kind(r, "gpu_health", "ecc");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->ranks, Ranks{5});
  EXPECT_EQ(find_kind(r, "straggler"), nullptr);
}

// 1024 ranks, 128 nodes, node clocks up to 50 ms apart: same culprits.
TEST(Scale, ThousandRanksWithClockOffsets) {
  TempDir dir("scale");
  synth::SynthSpec spec;
  spec.out_dir = dir.path();
  spec.ranks = 1024;
  spec.nodes = 128;
  spec.tp = 8;
  spec.steps = 20;
  spec.clock_offset_ms = 50;
  spec.sample_hz = 1;
  Report r = synth_and_analyze(spec, {"straggler:rank=517,factor=1.2", "stop:rank=901,op=15"});
  EXPECT_GT(r.clock.max_abs_offset_ms, 20.0);
  ASSERT_GE(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].kind, "hang");
  EXPECT_EQ(r.findings[0].subkind, "missing_rank");
  EXPECT_EQ(r.findings[0].ranks, Ranks{901});
  EXPECT_EQ(r.findings[0].seq, 15u);
  const Finding* s = find_kind(r, "straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ranks, Ranks{517});
  EXPECT_EQ(s->nodes, Nodes{"node65"});
  EXPECT_EQ(r.findings.size(), 2u);
}

}  // namespace
}  // namespace ringside::analysis::test
