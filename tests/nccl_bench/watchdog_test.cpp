// The watchdog's pure parts: which peer an NCCL error text names, and the
// deadline that ends a process stuck in a call that cannot be polled.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/watchdog.h"

namespace ringside::bench {
namespace {

std::vector<RankInfo> hosts(const std::vector<std::string>& names) {
  std::vector<RankInfo> infos(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    infos[i].rank = static_cast<int32_t>(i);
    std::snprintf(infos[i].hostname, sizeof infos[i].hostname, "%s", names[i].c_str());
  }
  return infos;
}

TEST(PeersNamedIn, TheOtherMemberOfATwoRankCommunicator) {
  EXPECT_EQ(peers_named_in("anything", {5, 9}, 0, {}), std::vector<int>{9});
  EXPECT_EQ(peers_named_in("", {5, 9}, 1, {}), std::vector<int>{5});
}

TEST(PeersNamedIn, TheOneOtherRankTheTextNames) {
  const std::string sim =
      "comm 99e4 rank 1/4: lost the connection to rank 3 (its process died or aborted the "
      "communicator) while this rank still expected data from it";
  EXPECT_EQ(peers_named_in(sim, {0, 1, 2, 3}, 1, {}), std::vector<int>{3});
  // Ranks of a split communicator are mapped to world ranks; a sentence may end the name.
  EXPECT_EQ(peers_named_in("rank 0/4: sending to rank 2.", {4, 5, 6, 7}, 0, {}),
            std::vector<int>{6});
  // The reporting rank itself, ranks out of range and two different ranks name nobody.
  EXPECT_TRUE(peers_named_in("rank 1 failed", {0, 1, 2, 3}, 1, {}).empty());
  EXPECT_TRUE(peers_named_in("rank 7 failed", {0, 1, 2, 3}, 1, {}).empty());
  EXPECT_TRUE(peers_named_in("rank 2 and rank 3 failed", {0, 1, 2, 3}, 1, {}).empty());
  EXPECT_TRUE(peers_named_in("rank 22 or frank 2 or rank 2x", {0, 1, 2, 3}, 1, {}).empty());
  EXPECT_TRUE(peers_named_in("rank 3", {0, 1, 2, 3}, -1, {}).empty());
}

TEST(PeersNamedIn, TheRanksOnTheOneOtherHostTheTextNames) {
  const auto infos = hosts({"h1", "h1", "h2", "h2", "h20"});
  const std::vector<int> members{0, 1, 2, 3, 4};
  EXPECT_EQ(peers_named_in("Connection closed by remote peer h2<43211>", members, 0, infos),
            (std::vector<int>{2, 3}));
  EXPECT_EQ(peers_named_in("peer h20 is gone.", members, 0, infos), std::vector<int>{4});
  EXPECT_TRUE(peers_named_in("h1 lost h2 and h20", members, 0, infos).empty());
  EXPECT_TRUE(peers_named_in("this host h1 failed", members, 0, infos).empty());
  EXPECT_TRUE(peers_named_in("Connection closed by remote peer h2<1>", members, 0, {}).empty());
}

TEST(Deadline, EndsTheProcessWhenTheCallDoesNotReturn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Deadline d(0.2, "nccl_bench: error: the call did not return", 3);
        std::this_thread::sleep_for(std::chrono::seconds(60));
      },
      ::testing::ExitedWithCode(3), "the call did not return");
}

// A deadline that fired would end this test process with code 3.
TEST(Deadline, IsDismissedWhenTheCallReturns) {
  { Deadline d(0.5, "never printed", 3); }
  { Deadline none(0, "no time limit", 3); }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  SUCCEED();
}

}  // namespace
}  // namespace ringside::bench
