// validate's planning and verdict rules, without GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "validate/baseline.h"
#include "validate/default_floors.h"
#include "validate/evaluate.h"
#include "validate/plan.h"
#include "validate/validate_output.h"

namespace ringside::bench {
namespace {

void expect_disjoint(const std::vector<Round>& rounds) {
  for (const Round& r : rounds) {
    std::set<int> seen;
    for (const NodePair& p : r.pairs) {
      EXPECT_LT(p.first, p.second);
      EXPECT_TRUE(seen.insert(p.first).second) << "node " << p.first << " twice in a round";
      EXPECT_TRUE(seen.insert(p.second).second) << "node " << p.second << " twice in a round";
    }
  }
}

TEST(Plan, RingCoversEveryNeighbourPairInAtMostThreeRounds) {
  for (int n = 2; n <= 17; ++n) {
    const auto rounds = ring_rounds(n);
    expect_disjoint(rounds);
    EXPECT_LE(rounds.size(), 3u);
    std::set<NodePair> pairs;
    for (const Round& r : rounds) pairs.insert(r.pairs.begin(), r.pairs.end());
    std::set<NodePair> want;
    for (int i = 0; i < n; ++i) want.insert({std::min(i, (i + 1) % n), std::max(i, (i + 1) % n)});
    EXPECT_EQ(pairs, want) << "n=" << n;
  }
}

TEST(Plan, AllPairsEachPairOnceInLinearRounds) {
  for (int n = 2; n <= 17; ++n) {
    const auto rounds = all_pairs_rounds(n);
    expect_disjoint(rounds);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << "n=" << n;
    std::multiset<NodePair> pairs;
    for (const Round& r : rounds) pairs.insert(r.pairs.begin(), r.pairs.end());
    EXPECT_EQ(static_cast<int>(pairs.size()), n * (n - 1) / 2);
    EXPECT_EQ(std::set<NodePair>(pairs.begin(), pairs.end()).size(), pairs.size());
  }
}

// A node pair reading `gbps` in each of 8 passes.
PairResult pair_at(NodePair nodes, double gbps) {
  return {nodes, {gbps}, {{gbps, 0.98 * gbps}}, std::vector<std::vector<double>>(8, {gbps})};
}
void set_pair(PairResult& p, double gbps) {
  p = pair_at(p.nodes, gbps);
}

// 4 nodes of 2 GPUs, one size; all pairs measured.
ValidateData healthy4() {
  ValidateData d;
  d.nodes = {"n1", "n2", "n3", "n4"};
  d.models = std::vector<std::string>(4, "GPU-X");
  d.gpus = {2, 2, 2, 2};
  d.sizes = {64ull << 20};
  d.intra = {{4.0}, {3.9}, {4.1}, {4.0}};
  d.health_fail.assign(4, {});
  d.health_warn.assign(4, {});
  for (const Round& r : all_pairs_rounds(4)) {
    for (const NodePair& p : r.pairs) d.pairs.push_back(pair_at(p, 1.0));
  }
  return d;
}

// One node of one GPU: the header counts in the singular.
TEST(Render, OneNodeOneRankOneRoundAreSingular) {
  ValidateData d;
  d.nodes = {"n1"};
  d.models = {"GPU-X"};
  d.gpus = {1};
  d.sizes = {64ull << 20};
  d.intra = {{4.0}};
  d.health_fail.assign(1, {});
  d.health_warn.assign(1, {});
  ValidateRunInfo info;
  info.level = "quick";
  info.nranks = 1;
  info.rounds = 1;
  const std::string text = render_tables(d, evaluate(d, nullptr, 10), info);
  EXPECT_NE(text.find("1 node, 1 rank, level quick"), std::string::npos) << text;
  EXPECT_NE(text.find("1 inter-node round,"), std::string::npos) << text;
}

TEST(Evaluate, HealthyFleetPasses) {
  const Verdict v = evaluate(healthy4(), nullptr, 10);
  EXPECT_TRUE(v.pass);
  for (const NodeVerdict& n : v.nodes) EXPECT_TRUE(n.pass);
  for (const LinkVerdict& l : v.links) EXPECT_EQ(l.status, LinkStatus::kPass);
}

TEST(Evaluate, SlowNicNodeAndThrottledNodeFailAndNothingElse) {
  ValidateData d = healthy4();
  for (PairResult& p : d.pairs) {
    if (p.nodes.first == 1 || p.nodes.second == 1) set_pair(p, 0.4);  // n2's NIC
  }
  d.intra[2] = {2.0};  // n3's slow GPU
  d.health_fail[2] = {"GPU 1: clock event reasons sw_thermal_slowdown"};
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_FALSE(v.pass);
  EXPECT_TRUE(v.nodes[0].pass);
  EXPECT_FALSE(v.nodes[1].pass);
  EXPECT_FALSE(v.nodes[2].pass);
  EXPECT_TRUE(v.nodes[3].pass);
  ASSERT_FALSE(v.nodes[1].reasons.empty());
  EXPECT_NE(v.nodes[1].reasons[0].find("inter-node: 3 of 3 node pairs slow"), std::string::npos);
  bool thermal = false, intra = false;
  for (const std::string& r : v.nodes[2].reasons) {
    thermal |= r.find("sw_thermal") != std::string::npos;
    intra |= r.find("intra-node all_reduce 64M") != std::string::npos;
  }
  EXPECT_TRUE(thermal);
  EXPECT_TRUE(intra);
  for (size_t p = 0; p < d.pairs.size(); ++p) {
    const bool touches = d.pairs[p].nodes.first == 1 || d.pairs[p].nodes.second == 1;
    EXPECT_EQ(v.links[p].status, touches ? LinkStatus::kAttributed : LinkStatus::kPass);
  }
  const auto drains = drain_commands(d, v);
  ASSERT_EQ(drains.size(), 2u);
  EXPECT_EQ(drains[0][2], "nodename=n2");
  EXPECT_EQ(render_command(drains[1]).rfind(
                "scontrol update nodename=n3 state=drain reason=\"ringside validate: ", 0),
            0u);
}

TEST(Evaluate, SlowPairIsALinkNotANode) {
  ValidateData d = healthy4();
  for (PairResult& p : d.pairs) {
    if (p.nodes == NodePair{0, 3}) set_pair(p, 0.5);
  }
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_FALSE(v.pass);
  for (const NodeVerdict& n : v.nodes) EXPECT_TRUE(n.pass);
  int failed = 0;
  for (size_t p = 0; p < d.pairs.size(); ++p) {
    if (v.links[p].status == LinkStatus::kFail) {
      ++failed;
      EXPECT_EQ(d.pairs[p].nodes, (NodePair{0, 3}));
    }
  }
  EXPECT_EQ(failed, 1);
}

// A pair 20% below the others in some passes only (a busy moment on its round) is
// no slow pair, and worth measuring again only when that is half of its passes;
// the same pair 20% below in every pass fails as a link.
TEST(Evaluate, APairIsJudgedAgainstThePairsOfTheSamePass) {
  for (int slow_passes : {3, 4, 8}) {
    ValidateData d = healthy4();
    for (PairResult& p : d.pairs) {
      if (p.nodes != NodePair{0, 3}) continue;
      for (int t = 0; t < slow_passes; ++t) p.passes[static_cast<size_t>(t)] = {0.8};
    }
    const Verdict v = evaluate(d, nullptr, 10);
    EXPECT_EQ(v.pass, slow_passes < 8) << slow_passes;
    EXPECT_EQ(node_pairs_suspect(d, nullptr, 10), slow_passes >= 4) << slow_passes;
  }
  // A machine-wide slow moment slows every pair of its pass: nothing stands out.
  ValidateData d = healthy4();
  for (PairResult& p : d.pairs) {
    for (int t = 0; t < 8; t += 2) p.passes[static_cast<size_t>(t)] = {0.3};
  }
  EXPECT_TRUE(evaluate(d, nullptr, 10).pass);
  EXPECT_FALSE(node_pairs_suspect(d, nullptr, 10));
}

// A slow NIC slows half of the 6 pairs of 4 nodes.  Against the other 5 pairs
// of a pass (2 slow, 3 healthy), the median is the slowest healthy one: one
// healthy pair at the slow level in a quarter of the passes (a busy machine) was
// enough to hide a slow pair.  Every pair of the node is slow, whichever healthy
// pair has the slow moments and however the moments fall.
TEST(Evaluate, ASlowNodeIsNotHiddenByHealthyPairsSlowMoments) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    ValidateData d = healthy4();
    unsigned x = seed;
    auto next = [&x] { return x = x * 1103515245u + 12345u, (x >> 16) & 0x7fff; };
    for (PairResult& p : d.pairs) {
      const bool slow = p.nodes.first == 2 || p.nodes.second == 2;  // n3's NIC
      p.passes.assign(16, {});
      p.busbw = {0.0};
      for (auto& pass : p.passes) {
        pass = {(slow ? 1.0 / 6 : 1.0) * (0.85 + 0.3 * (next() % 100) / 100.0)};
        p.busbw[0] = std::max(p.busbw[0], pass[0]);
      }
      p.rails = {{p.busbw[0], p.busbw[0]}};
    }
    // In 5 of 16 passes one healthy pair (a different one each time) reads as slow
    // as the NIC's pairs.
    for (int t = 0; t < 16; t += 3) {
      const unsigned pick = next() % 3;
      unsigned healthy = 0;
      for (PairResult& p : d.pairs) {
        if (p.nodes.first == 2 || p.nodes.second == 2) continue;
        if (healthy++ == pick) p.passes[static_cast<size_t>(t)] = {0.15};
      }
    }
    const Verdict v = evaluate(d, nullptr, 30);
    EXPECT_FALSE(v.nodes[2].pass) << seed;
    ASSERT_FALSE(v.nodes[2].reasons.empty()) << seed;
    EXPECT_NE(v.nodes[2].reasons[0].find("inter-node: 3 of 3 node pairs slow"), std::string::npos)
        << seed << ": " << v.nodes[2].reasons[0];
    for (size_t n : {0u, 1u, 3u}) EXPECT_TRUE(v.nodes[n].pass) << seed << " node " << n;
    for (size_t p = 0; p < d.pairs.size(); ++p)
      EXPECT_NE(v.links[p].status, LinkStatus::kFail) << seed << " pair " << p;
  }
}

TEST(Evaluate, ThresholdIsRespected) {
  ValidateData d = healthy4();
  d.intra[0] = {3.7};  // 7.5% below the median 4.0 of its peers
  EXPECT_TRUE(evaluate(d, nullptr, 10).pass);
  EXPECT_FALSE(evaluate(d, nullptr, 5).pass);
}

TEST(Evaluate, BaselineFloorFailsEvenWhenPeersAgree) {
  const Baseline b = Baseline::parse(
      R"({"schema":"ringside.baseline/1","models":{"GPU-X":{"intra_node_all_reduce":{"64M":5.0}}}})",
      "test");
  const Verdict v = evaluate(healthy4(), &b, 10);
  EXPECT_FALSE(v.pass);
  for (const NodeVerdict& n : v.nodes) {
    ASSERT_FALSE(n.pass);
    EXPECT_NE(n.reasons[0].find("below the baseline 5.00 GB/s"), std::string::npos) << n.reasons[0];
  }
  const Baseline other = Baseline::parse(
      R"({"schema":"ringside.baseline/1","models":{"GPU-Y":{"intra_node_all_reduce":{"64M":5.0}}}})",
      "test");
  EXPECT_TRUE(evaluate(healthy4(), &other, 10).pass);  // other model: no floor applies
}

TEST(Baseline, ParsesAndRejects) {
  const Baseline b = Baseline::parse(
      R"({"schema":"ringside.baseline/1","models":{"default":{"inter_node_sendrecv":{"1M":2,"64M":20.5}}}})",
      "f");
  EXPECT_DOUBLE_EQ(b.floor("anything", kTestInter, 64ull << 20).value(), 20.5);
  EXPECT_FALSE(b.floor("anything", kTestIntra, 64ull << 20));
  EXPECT_FALSE(b.floor("anything", kTestInter, 32ull << 20));
  for (const char* bad : {
           "not json",
           R"({"models":{}})",
           R"({"schema":"ringside.baseline/1","models":{"m":{"bogus_test":{"1M":1}}}})",
           R"({"schema":"ringside.baseline/1","models":{"m":{"intra_node_all_reduce":{"1Q":1}}}})",
           R"({"schema":"ringside.baseline/1","models":{"m":{"intra_node_all_reduce":{"1M":-1}}}})",
           R"({"schema":"ringside.baseline/1","models":{},"extra":1})",
       }) {
    EXPECT_THROW(Baseline::parse(bad, "f"), UsageError) << bad;
  }
  EXPECT_THROW(Baseline::load("/nonexistent/baseline.json"), UsageError);
}

}  // namespace
}  // namespace ringside::bench

namespace ringside::bench {
namespace {

// How many of a node's "not compared" notes start with `prefix`.
size_t unchecked_count(const NodeVerdict& n, const std::string& prefix) {
  return static_cast<size_t>(
      std::count_if(n.unchecked.begin(), n.unchecked.end(),
                    [&](const std::string& u) { return u.rfind(prefix, 0) == 0; }));
}

// One node of 4 GPUs and no baseline: the GPUs are each other's reference.
ValidateData one_node(std::vector<double> copy) {
  ValidateData d;
  d.nodes = {"n1"};
  d.models = {"GPU-X"};
  d.gpus = {static_cast<int>(copy.size())};
  d.sizes = {1ull << 20};
  d.intra = {{4.0}};
  d.copy_passes.assign(1, {});
  for (double c : copy) d.copy_passes[0].push_back(std::vector<double>(8, c));
  d.copy = {std::move(copy)};
  d.health_fail.assign(1, {});
  d.health_warn.assign(1, {});
  return d;
}

TEST(Evaluate, ASlowGpuFailsItsNodeWithoutBaselineOrPeerNodes) {
  const ValidateData d = one_node({20.0, 5.0, 21.0, 20.5});
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_FALSE(v.pass);
  ASSERT_EQ(v.nodes[0].reasons.size(), 1u);
  EXPECT_NE(v.nodes[0].reasons[0].find("GPU 1 device copy 64M: best 5.00 GB/s, more than 10% "
                                       "below the other GPU-X GPUs (20.50 GB/s) in 8 of 8 passes"),
            std::string::npos)
      << v.nodes[0].reasons[0];
  EXPECT_TRUE(copies_suspect(d, nullptr, 10));
  // The all_reduce had nothing to compare with, there was no floor and no other
  // node: said.
  EXPECT_EQ(v.nodes[0].unchecked.size(), 3u);
  EXPECT_EQ(unchecked_count(v.nodes[0], "intra-node all_reduce: no other node"), 1u);
  EXPECT_EQ(unchecked_count(v.nodes[0], "floors: no entry for GPU-X"), 1u);
  EXPECT_EQ(unchecked_count(v.nodes[0], "inter-node: one node"), 1u);
}

// A busy moment that slows one GPU's copies in some passes is no slow GPU; the same
// GPU 14% slower in every pass is.
TEST(Evaluate, ACopySlowedByABusyMomentIsNoSlowGpu) {
  ValidateData d = one_node({2.0, 2.0, 2.0, 2.0});
  for (size_t t = 0; t < 3; ++t) d.copy_passes[0][3][t] = 1.69;
  EXPECT_TRUE(evaluate(d, nullptr, 10).pass);
  for (size_t t = 0; t < 8; ++t) d.copy_passes[0][3][t] = 1.69;
  d.copy[0][3] = 1.69;
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_FALSE(v.pass);
  ASSERT_EQ(v.nodes[0].reasons.size(), 1u);
  EXPECT_EQ(v.nodes[0].reasons[0].rfind("GPU 3 device copy 64M: best 1.69 GB/s", 0), 0u);
}

TEST(Evaluate, EvenGpusPassAndAFloorOrAPeerNodeIsAComparison) {
  ValidateData d = one_node({20.0, 19.5, 21.0, 20.5});
  EXPECT_TRUE(evaluate(d, nullptr, 10).pass);
  EXPECT_FALSE(copies_suspect(d, nullptr, 10));
  const Baseline b = Baseline::parse(
      R"({"schema": "ringside.baseline/1", "models": {"GPU-X": {"intra_node_all_reduce": {"1M": 3},
          "device_copy": {"64M": 25}}}})",
      "test");
  const Verdict v = evaluate(d, &b, 10);
  ASSERT_EQ(v.nodes[0].unchecked.size(), 1u);  // only: one node, no NIC test
  EXPECT_EQ(unchecked_count(v.nodes[0], "inter-node: one node"), 1u);
  EXPECT_FALSE(v.pass);  // every GPU below the 25 GB/s floor
  EXPECT_EQ(v.nodes[0].reasons.size(), 4u);
}

TEST(Evaluate, ALoneGpuWithNothingToCompareIsSaid) {
  ValidateData d = one_node({20.0});
  d.intra = {{NAN}};  // one GPU: no intra-node all_reduce
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(unchecked_count(v.nodes[0], "device copy"), 1u);
}

TEST(Evaluate, CopyBytesAreAtLeast64MiB) {
  EXPECT_EQ(copy_bytes({1ull << 20}), 64ull << 20);
  EXPECT_EQ(copy_bytes({4ull << 20, 256ull << 20}), 256ull << 20);
}

}  // namespace
}  // namespace ringside::bench

namespace ringside::bench {
namespace {

// Two nodes whose all_reduce readings differ by 14%: evidence only when the
// readings repeat better than that.
TEST(Evaluate, AnAllReduceGapWithinTheReadingsSpreadIsNotEvidence) {
  ValidateData d;
  d.nodes = {"n1", "n2"};
  d.models = {"GPU-X", "GPU-X"};
  d.gpus = {4, 4};
  d.sizes = {64ull << 20};
  d.intra = {{0.51}, {0.44}};
  d.health_fail.assign(2, {});
  d.health_warn.assign(2, {});
  d.intra_spread = {{0.20}, {0.25}};
  EXPECT_TRUE(evaluate(d, nullptr, 10).pass);
  EXPECT_TRUE(slow_intra(d, nullptr, 10).empty());
  d.intra_spread = {{0.02}, {0.03}};
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_FALSE(v.nodes[1].pass);
  EXPECT_TRUE(v.nodes[0].pass);
  EXPECT_EQ(slow_intra(d, nullptr, 10), std::vector<int>{1});
  // A 4x slower node stands out of any plausible spread.
  d.intra = {{0.51}, {0.12}};
  d.intra_spread = {{0.3}, {0.3}};
  EXPECT_FALSE(evaluate(d, nullptr, 10).nodes[1].pass);
}

}  // namespace
}  // namespace ringside::bench

namespace ringside::bench {
namespace {

// Readings of the 6 GPU pairs of a 4-GPU node over `passes` passes: every pair
// `base` GB/s with a deterministic +-20% wobble, every fourth pass a machine-wide
// slow moment (all pairs at 40%), and `slow(a, b)` as the factor a pair runs at.
template <typename Slow>
PairPasses four_gpu_pairs(int passes, Slow slow) {
  PairPasses r;
  r.pairs = {{0, 3}, {1, 2}, {0, 2}, {1, 3}, {0, 1}, {2, 3}};
  for (int t = 0; t < passes; ++t) {
    std::vector<double> row;
    for (size_t p = 0; p < r.pairs.size(); ++p) {
      const double wobble = 0.8 + 0.4 * static_cast<double>((t * 7 + p * 3) % 10) / 9.0;
      const double moment = t % 4 == 3 ? 0.4 : 1.0;
      row.push_back(0.2 * wobble * moment * slow(r.pairs[p].first, r.pairs[p].second));
    }
    r.passes.push_back(row);
  }
  return r;
}

ValidateData node_with_pairs(PairPasses r) {
  ValidateData d = one_node({2.0, 2.0, 2.0, 2.0});
  d.gpu_pair_size = 1ull << 20;
  d.gpu_pairs = {std::move(r)};
  return d;
}

std::string all_reasons(const NodeVerdict& n) {
  std::string s;
  for (const std::string& r : n.reasons) s += r + "\n";
  return s;
}

TEST(GpuPairs, ASlowPairIsNamedAsTheLinkBetweenItsTwoGpus) {
  const ValidateData d =
      node_with_pairs(four_gpu_pairs(16, [](int a, int b) { return a == 1 && b == 2 ? 0.25 : 1; }));
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_FALSE(v.pass);
  const std::string why = all_reasons(v.nodes[0]);
  ASSERT_EQ(v.nodes[0].reasons.size(), 1u) << why;
  EXPECT_NE(why.find("GPU 1<->GPU 2 sendrecv 1M"), std::string::npos) << why;
  EXPECT_NE(why.find("in 16 of 16 passes: the link between these two GPUs"), std::string::npos)
      << why;
  EXPECT_TRUE(gpu_pairs_suspect(d, nullptr, 10));
}

TEST(GpuPairs, ASlowGpuIsNamedRatherThanItsPairs) {
  const ValidateData d =
      node_with_pairs(four_gpu_pairs(16, [](int a, int b) { return a == 2 || b == 2 ? 0.25 : 1; }));
  const Verdict v = evaluate(d, nullptr, 10);
  const std::string why = all_reasons(v.nodes[0]);
  ASSERT_EQ(v.nodes[0].reasons.size(), 1u) << why;
  EXPECT_NE(why.find("GPU 2: sendrecv 1M with 3 of 3 other GPUs of the node slow"),
            std::string::npos)
      << why;
}

// Noise and machine-wide slow moments hit a pass's pairs alike: a healthy node passes.
TEST(GpuPairs, AHealthyNodePassesThroughNoiseAndSlowMoments) {
  const ValidateData d = node_with_pairs(four_gpu_pairs(16, [](int, int) { return 1.0; }));
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_TRUE(v.pass) << all_reasons(v.nodes[0]);
  // A pair that is the slowest of its pass only now and then is no slow pair.
  PairPasses r = four_gpu_pairs(16, [](int, int) { return 1.0; });
  for (int t = 0; t < 16; t += 2) r.passes[static_cast<size_t>(t)][1] *= 0.5;
  EXPECT_TRUE(evaluate(node_with_pairs(r), nullptr, 10).pass);
}

// Two GPUs make one pair: nothing to compare with but the floor, and that is said.
TEST(GpuPairs, OnePairIsJudgedByTheFloorOrSaidToBeUnchecked) {
  PairPasses r;
  r.pairs = {{0, 1}};
  for (int t = 0; t < 8; ++t) r.passes.push_back({0.19});
  ValidateData d = one_node({2.0, 2.0});
  d.gpu_pair_size = 1ull << 20;
  d.gpu_pairs = {r};
  const Verdict v = evaluate(d, nullptr, 10);
  EXPECT_TRUE(v.pass);
  bool said = false;
  for (const std::string& u : v.nodes[0].unchecked) said = said || u.find("GPU pair") == 0;
  EXPECT_TRUE(said);
  const Baseline b = Baseline::parse(
      R"({"schema": "ringside.baseline/1", "models": {"GPU-X": {"intra_node_pair_sendrecv": {"1M": 0.5}}}})",
      "test");
  const Verdict f = evaluate(d, &b, 10);
  EXPECT_FALSE(f.pass);
  EXPECT_NE(all_reasons(f.nodes[0])
                .find("GPU 0<->GPU 1 sendrecv 1M: best 0.19 GB/s, below the "
                      "floor 0.50 GB/s"),
            std::string::npos)
      << all_reasons(f.nodes[0]);
}

TEST(FloorTable, HasTheSimModelAndIsOverriddenEntryByEntry) {
  Baseline t = default_floors();
  const std::string sim = "ringside-sim H100-SXM5-80GB";
  EXPECT_TRUE(t.has_model(sim));
  EXPECT_DOUBLE_EQ(t.floor(sim, kTestCopy, 64ull << 20).value(), 1.0);
  EXPECT_TRUE(t.floor("NVIDIA H100 80GB HBM3", kTestIntraPair, 64ull << 20));
  t.override_with(Baseline::parse(
      R"({"schema": "ringside.baseline/1", "models": {"ringside-sim H100-SXM5-80GB":
          {"device_copy": {"64M": 1.5}, "intra_node_pair_sendrecv": {"1M": 0.1}}}})",
      "site.json"));
  EXPECT_DOUBLE_EQ(t.floor(sim, kTestCopy, 64ull << 20).value(), 1.5);
  EXPECT_DOUBLE_EQ(t.floor(sim, kTestIntraPair, 1ull << 20).value(), 0.1);
  EXPECT_TRUE(t.floor("NVIDIA H100 80GB HBM3", kTestCopy, 64ull << 20));  // kept
  EXPECT_EQ(t.source(), "built-in floor table + site.json");
}

TEST(FloorTable, BadInputNamesTheKeyAndTheFix) {
  try {
    Baseline::parse(
        R"({"schema": "ringside.baseline/1", "models": {"m": {"intra_node_pair": {"1M": 1}}}})",
        "site.json");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("site.json: models.m.intra_node_pair: unknown test"), std::string::npos) << m;
    EXPECT_NE(m.find("intra_node_pair_sendrecv"), std::string::npos) << m;
  }
  try {
    Baseline::parse(
        R"({"schema": "ringside.baseline/1", "models": {"m": {"device_copy": {"64M": "fast"}}}})",
        "site.json");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("models.m.device_copy.64M: must be a positive number"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringside::bench
