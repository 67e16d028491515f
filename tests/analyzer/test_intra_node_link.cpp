// Paths inside a node timed by their collectives alone (no profiler plugin): four
// tensor-parallel pairs on two nodes, each all-reducing 4 MiB fourteen times.  What
// delays a transfer now and then (a busy host, a shared bus) only adds time, and by
// how much varies from one transfer to the next; a slow link is slow in nearly every
// transfer.  A pair whose transfers vary several-fold, and whose typical transfer is
// even half again as long as the others', is no slow link; a pair slower in every
// transfer is one, and is named with its node.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 8, kPerNode = 4, kOps = 14;
constexpr int64_t kStart = 100 * kMs, kEvery = 20 * kMs;

uint64_t pair_comm(int r) {
  return 0x8100 + static_cast<uint64_t>(r / 2);
}

// Writes the job: each transfer takes 1 ms times exp(N(0, sigma)), `slower` times that on
// pair {4,5}.  Returns its analysis.
Report pairs_job(const std::string& dir, uint64_t seed, double sigma, double slower) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sigma);
  std::vector<std::vector<int64_t>> takes(kRanks / 2);
  for (int p = 0; p < kRanks / 2; ++p) {
    for (int k = 0; k < kOps; ++k)
      takes[static_cast<size_t>(p)].push_back(
          static_cast<int64_t>(kMs * (p == 2 ? slower : 1.0) * std::exp(noise(rng))));
  }
  for (int r = 0; r < kRanks; ++r) {
    const trace::CommRecord comm = hand_comm(pair_comm(r), 2, r % 2);
    std::vector<trace::OpRecord> ops;
    for (int k = 0; k < kOps; ++k) {
      const int64_t at = kStart + k * kEvery;
      const int64_t took = takes[static_cast<size_t>(r / 2)][static_cast<size_t>(k)];
      ops.push_back(hand_op(trace::OpKind::kAllReduce, pair_comm(r), static_cast<uint64_t>(k), at,
                            at + took));
    }
    write_hand_trace(dir, "pairs", r, kRanks, kPerNode, std::span(&comm, 1), ops,
                     kStart + kOps * kEvery);
  }
  return analyze_quietly(dir);
}

TEST(IntraNodeLink, PathsWhoseTransfersVaryAreNotSlowEvenWhenOneIsTypicallySlower) {
  // Pair {4,5} half again as slow as the others in the typical transfer (as pipeline
  // stages that transfer while others compute on a shared host), every pair's transfers
  // spread several-fold.
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    TempDir dir("intra-noisy");
    const Report r = pairs_job(dir.path(), seed, 0.7, 1.7);
    for (const Finding* f : slow_links(r))
      ADD_FAILURE() << "seed " << seed << ": " << f->subkind << ": " << f->evidence;
  }
}

TEST(IntraNodeLink, APathSlowInEveryTransferIsNamed) {
  // Three times slower with transfers that vary by a fifth; twice as slow, varying by 5%.
  for (const auto& [slower, sigma] : {std::pair{3.0, 0.2}, std::pair{2.0, 0.05}}) {
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      TempDir dir("intra-slow");
      const Report r = pairs_job(dir.path(), seed, sigma, slower);
      const std::string at = "x" + std::to_string(slower) + " seed " + std::to_string(seed);
      const Finding* f = find_kind(r, "slow_link", "intra_node");
      ASSERT_NE(f, nullptr) << at;
      EXPECT_EQ(f->ranks, (std::vector<int64_t>{4, 5})) << at << ": " << f->evidence;
      EXPECT_EQ(f->nodes, (std::vector<std::string>{"node2"})) << at;
      EXPECT_EQ(slow_links(r).size(), 1u) << at;
    }
  }
}

}  // namespace
}  // namespace ringside::analysis::test
