// Paths between nodes timed by their collectives alone (no profiler plugin): six
// two-rank communicators on four nodes, one joining each pair of nodes, each
// all-reducing 4 MiB fourteen times.  What delays a transfer now and then (a busy host,
// traffic of other jobs) only adds time, by an amount that varies from one transfer to
// the next; a slow link or network interface is slow in nearly every transfer.  Paths
// whose transfers only vary, even several-fold, name no link and no node; a slow node
// pair and a slow network interface are named, and nothing else is.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kNodes = 4, kPerNode = 3, kRanks = kNodes * kPerNode, kOps = 14;
constexpr int64_t kStart = 100 * kMs, kEvery = 20 * kMs;
// The node pair each communicator joins (nodes 0-3 are named node1-node4).
constexpr int kPairs = 6;
constexpr int kJoins[kPairs][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

uint64_t pair_comm(int p) {
  return 0x9100 + static_cast<uint64_t>(p);
}

// Writes the job: each transfer takes 4 ms times exp(N(0, sigma)), `slower` times that on
// the communicators `slow` names.  Returns its analysis.
Report nodes_job(const std::string& dir, uint64_t seed, double sigma, double slower,
                 const std::set<int>& slow) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  int used[kNodes] = {};
  for (int p = 0; p < kPairs; ++p) {
    std::vector<int64_t> takes;
    for (int k = 0; k < kOps; ++k) {
      const double factor = slow.count(p) != 0 ? slower : 1.0;
      takes.push_back(static_cast<int64_t>(4 * kMs * factor * std::exp(noise(rng))));
    }
    for (int side = 0; side < 2; ++side) {
      const int node = kJoins[p][side];
      const int rank = node * kPerNode + used[node]++;
      const trace::CommRecord comm = hand_comm(pair_comm(p), 2, side);
      std::vector<trace::OpRecord> ops;
      for (int k = 0; k < kOps; ++k) {
        const int64_t at = kStart + k * kEvery;
        ops.push_back(hand_op(trace::OpKind::kAllReduce, pair_comm(p), static_cast<uint64_t>(k), at,
                              at + takes[static_cast<size_t>(k)]));
      }
      write_hand_trace(dir, "nodes", rank, kRanks, kPerNode, std::span(&comm, 1), ops,
                       kStart + kOps * kEvery);
    }
  }
  return analyze_quietly(dir);
}

TEST(InterNodeLink, PathsWhoseTransfersVaryNameNoLinkNorNode) {
  // Transfers spread several-fold on every path; then also one path half again as slow
  // as the others in the typical transfer (one that shares its nodes' network with other
  // traffic), but now and then as fast as they are.
  for (const auto& [sigma, slower] :
       {std::pair{0.7, 1.0}, std::pair{1.0, 1.0}, std::pair{0.7, 1.7}}) {
    for (uint64_t seed = 1; seed <= 16; ++seed) {
      TempDir dir("inter-noisy");
      const Report r = nodes_job(dir.path(), seed, sigma, slower, {2});
      for (const Finding* f : slow_links(r))
        ADD_FAILURE() << "sigma " << std::to_string(sigma) << " x" << std::to_string(slower)
                      << " seed " << seed << ": " << f->subkind << ": " << f->evidence;
    }
  }
}

TEST(InterNodeLink, ASlowNodePairIsNamed) {
  // node1 <-> node4 three times slower with transfers that vary by a fifth; twice as
  // slow, varying by 5%.
  for (const auto& [slower, sigma] : {std::pair{3.0, 0.2}, std::pair{2.0, 0.05}}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      TempDir dir("inter-pair");
      const Report r = nodes_job(dir.path(), seed, sigma, slower, {2});
      const std::string at = "x" + std::to_string(slower) + " seed " + std::to_string(seed);
      const Finding* f = find_kind(r, "slow_link", "node_pair");
      ASSERT_NE(f, nullptr) << at;
      EXPECT_EQ(f->nodes, (std::vector<std::string>{"node1", "node4"}))
          << at << ": " << f->evidence;
      EXPECT_EQ(f->ranks, (std::vector<int64_t>{2, 9})) << at;
      EXPECT_EQ(slow_links(r).size(), 1u) << at;
    }
  }
}

TEST(InterNodeLink, ASlowNetworkInterfaceIsNamed) {
  // Every path through node4 (communicators 2, 4 and 5) three times slower.
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    TempDir dir("inter-nic");
    const Report r = nodes_job(dir.path(), seed, 0.2, 3.0, {2, 4, 5});
    const std::string at = "seed " + std::to_string(seed);
    const Finding* f = find_kind(r, "slow_link", "nic");
    ASSERT_NE(f, nullptr) << at;
    EXPECT_EQ(f->nodes, (std::vector<std::string>{"node4"})) << at << ": " << f->evidence;
    EXPECT_EQ(f->ranks, (std::vector<int64_t>{9, 10, 11})) << at;
    EXPECT_EQ(slow_links(r).size(), 1u) << at;
  }
}

}  // namespace
}  // namespace ringside::analysis::test
