// Units: the link matrix built from the profiler plugin's /links rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <sstream>

#include "load/link_windows.h"
#include "load/trace_set.h"
#include "match/link_matrix.h"
#include "report/report_json.h"
#include "report/report_text.h"

namespace ringside::analysis::test {
namespace {

// 8 ranks, two per node; traced comms: world (0..7) and `mirror` (7..0).
TraceSet two_comm_set() {
  TraceSet set;
  set.world_size = 8;
  set.nodes = {"node1", "node2", "node3", "node4"};
  auto add_comm = [&](uint64_t id, std::vector<int64_t> members) {
    CommInfo c;
    c.id = id;
    c.index = static_cast<int>(set.comms.size());
    c.nranks = static_cast<int>(members.size());
    c.members = std::move(members);
    c.label = "comm" + std::to_string(id);
    set.comm_index[id] = c.index;
    set.comms.push_back(std::move(c));
  };
  add_comm(11, {0, 1, 2, 3, 4, 5, 6, 7});
  add_comm(12, {7, 6, 5, 4, 3, 2, 1, 0});
  for (int64_t r = 0; r < 8; ++r) {
    RankInfo ri;
    ri.rank = r;
    ri.has_file = true;
    ri.node_index = static_cast<int>(r / 2);
    set.ranks.push_back(std::move(ri));
  }
  return set;
}

trace::LinkRecord row(uint64_t hash, int rank, int peer, bool send, uint8_t channel, uint64_t bytes,
                      int64_t net_ns) {
  trace::LinkRecord l{};
  l.comm_hash = hash;
  l.nranks = 8;
  l.rank = rank;
  l.n_nodes = 4;
  l.peer = peer;
  l.channel = channel;
  l.is_send = send ? 1 : 0;
  l.ops = 10;
  l.steps = 20;
  l.bytes = bytes;
  l.net_ns = net_ns;
  l.active_ns = 2 * net_ns;
  l.peer_wait_ns = net_ns;
  return l;
}

const RankLink* find(const LinkMatrix& m, int64_t src, int64_t dst) {
  for (const RankLink& l : m.rank_links)
    if (l.src == src && l.dst == dst) return &l;
  return nullptr;
}

TEST(LinkMatrix, NcclCommunicatorsArePlacedByWhoReportsThemAtWhichPosition) {
  TraceSet set = two_comm_set();
  // NCCL's hashes are not the probe's ids.  Hash 0xA: every rank at its world
  // position; 0xB: every rank at its mirror position.
  for (int r = 0; r < 8; ++r) {
    set.ranks[static_cast<size_t>(r)].links.push_back(
        row(0xA, r, (r + 1) % 8, true, 0, 1'000'000, 1'000'000));
    set.ranks[static_cast<size_t>(r)].links.push_back(
        row(0xB, 7 - r, (7 - r + 1) % 8, true, 0, 1'000'000, 4'000'000));
  }
  const LinkMatrix m = build_link_matrix(set);
  EXPECT_EQ(m.unplaced_comms, 0);
  ASSERT_EQ(m.per_comm.size(), 2u);
  // World: rank 1 sends to world rank 2.  Mirror: global 1 is comm rank 6, its
  // peer 7 is global 0.
  const RankLink* w = find(m, 1, 2);
  const RankLink* mirror = find(m, 1, 0);
  ASSERT_NE(w, nullptr);
  ASSERT_NE(mirror, nullptr);
  EXPECT_NEAR(w->gbps, 1.0, 1e-9);
  EXPECT_NEAR(mirror->gbps, 0.25, 1e-9);
  EXPECT_NEAR(w->peer_wait, 0.5, 1e-9);
  EXPECT_EQ(w->src_node, 0);
  EXPECT_EQ(w->dst_node, 1);
}

TEST(LinkMatrix, ACommunicatorNoTracedOneMatchesIsCountedNotGuessed) {
  TraceSet set = two_comm_set();
  // Ranks 0 and 1 both claim position 3 of a comm of 8: no traced comm fits.
  set.ranks[0].links.push_back(row(0xC, 3, 4, true, 0, 1'000'000, 1'000'000));
  set.ranks[1].links.push_back(row(0xC, 3, 4, true, 0, 1'000'000, 1'000'000));
  const LinkMatrix m = build_link_matrix(set);
  EXPECT_EQ(m.unplaced_comms, 1);
  EXPECT_FALSE(m.observed());
}

TEST(LinkMatrix, ParallelChannelsAddUpAndTheBestStepIsWhatTheLinkCanDo) {
  TraceSet set = two_comm_set();
  // Rank 3 -> 4 on two channels, 1 MB in 2 ms each: 0.5 + 0.5 GB/s on average; its
  // fastest steps moved 512 KiB in 0.5 ms per channel.
  for (uint8_t ch : {0, 1}) {
    trace::LinkRecord l = row(0xA, 3, 4, true, ch, 1'000'000, 2'000'000);
    l.best_step_bytes = 512 << 10;
    l.best_step_ns = 500'000;
    set.ranks[3].links.push_back(l);
  }
  // The receiver's view: awaiting data 90% of its step time.
  trace::LinkRecord recv = row(0xA, 4, 3, false, 0, 2'000'000, 900);
  recv.active_ns = 1000;
  set.ranks[4].links.push_back(recv);
  const LinkMatrix m = build_link_matrix(set);
  const RankLink* l = find(m, 3, 4);
  ASSERT_NE(l, nullptr);
  EXPECT_NEAR(l->gbps, 1.0, 1e-9);
  EXPECT_NEAR(l->best_gbps, 2.0 * (512 << 10) / 500'000.0, 1e-9);
  EXPECT_NEAR(l->recv_wait, 0.9, 1e-9);
  EXPECT_EQ(l->bytes, 2'000'000u);
  ASSERT_EQ(m.node_links.size(), 1u);
  EXPECT_EQ(m.node_links[0].src_node, 1);
  EXPECT_EQ(m.node_links[0].dst_node, 2);
  EXPECT_NEAR(m.node_links[0].best_gbps, l->best_gbps, 1e-9);
}

TEST(LinkMatrix, APeerWithoutATraceHasNoNodeAndItsLinksAreLeftOut) {
  TraceSet set = two_comm_set();
  set.ranks[2].has_file = false;
  set.ranks[2].node_index = -1;
  set.ranks[1].links.push_back(row(0xA, 1, 2, true, 0, 1'000'000, 1'000'000));
  set.ranks[3].links.push_back(row(0xA, 3, 4, true, 0, 1'000'000, 1'000'000));
  const LinkMatrix m = build_link_matrix(set);
  EXPECT_EQ(find(m, 1, 2), nullptr);
  EXPECT_NE(find(m, 3, 4), nullptr);
  for (const NodeLink& n : m.node_links) {
    EXPECT_GE(n.src_node, 0);
    EXPECT_GE(n.dst_node, 0);
  }
}

// One file's rows over three flush windows: network proxy rows and kernel channel
// rows of the same peer, channel and direction are summed apart.
TEST(LinkMatrix, FlushWindowsAreSummedPerSourceAndTheMedianBestStepIsKept) {
  std::vector<trace::LinkRecord> rows;
  for (int64_t w = 1; w <= 3; ++w) {
    trace::LinkRecord proxy = row(0xA, 3, 4, true, 0, 1'000'000, 2'000'000);
    proxy.t_ns = w;
    proxy.best_step_bytes = 512 << 10;
    proxy.best_step_ns = 100'000 * w;  // 100, 200, 300 us: the median is 200 us
    trace::LinkRecord kernel = row(0xA, 3, 4, true, 0, 1'000'000, 3'000'000);
    kernel.t_ns = w;
    kernel.source = 1;
    kernel.steps = 0;
    rows.push_back(proxy);
    rows.push_back(kernel);
  }
  const auto sums = sum_link_windows(rows);
  ASSERT_EQ(sums.size(), 2u);
  for (const trace::LinkRecord& l : sums) {
    EXPECT_EQ(l.bytes, 3'000'000u) << "source " << int{l.source};
    EXPECT_EQ(l.ops, 30u);
    EXPECT_EQ(l.t_ns, 3);
    EXPECT_EQ(l.net_ns, l.source == 0 ? 6'000'000 : 9'000'000);
  }
  const trace::LinkRecord& proxy = sums[0].source == 0 ? sums[0] : sums[1];
  EXPECT_EQ(proxy.best_step_ns, 200'000);
  EXPECT_EQ(proxy.steps, 60u);
}

// An hour of one-second flush windows: the median best step is taken from at most
// kKeptBests windows spread over the whole job, close to the median of them all; a
// watch that adds the rows in parts gets the same as reading them at once.
TEST(LinkMatrix, ALongJobsMedianBestStepComesFromABoundedEvenSample) {
  std::vector<trace::LinkRecord> rows;
  std::vector<int64_t> all;
  for (int64_t w = 1; w <= 3600; ++w) {
    trace::LinkRecord l = row(0xA, 3, 4, true, 0, 1'000'000, 2'000'000);
    l.t_ns = w;
    l.best_step_bytes = 512 << 10;
    // Slow windows now and then (every third, 3x), and a drift over the hour.
    l.best_step_ns = (w % 3 == 0 ? 300'000 : 100'000) + 10 * ((w * 7919) % 3600);
    all.push_back(l.best_step_ns);
    rows.push_back(l);
  }
  std::nth_element(all.begin(), all.begin() + 1800, all.end());
  const auto whole = sum_link_windows(rows);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_NEAR(static_cast<double>(whole[0].best_step_ns), static_cast<double>(all[1800]),
              0.02 * static_cast<double>(all[1800]));
  EXPECT_EQ(whole[0].bytes, 3600u * 1'000'000u);
  LinkWindowSums parts;
  for (size_t from = 0; from < rows.size(); from += 7) {
    const size_t n = std::min<size_t>(7, rows.size() - from);
    parts.add(std::span<const trace::LinkRecord>(rows).subspan(from, n));
    if (from % 700 == 0) (void)parts.summed();
  }
  EXPECT_LT(parts.kept_bests(), kKeptBests);
  EXPECT_GT(parts.kept_bests(), kKeptBests / 2 - 1);
  const auto summed = parts.summed();
  ASSERT_EQ(summed.size(), 1u);
  EXPECT_EQ(summed[0].best_step_ns, whole[0].best_step_ns);
  EXPECT_EQ(summed[0].bytes, whole[0].bytes);
}

TEST(LinkMatrix, NoRowsMeansNotObserved) {
  const LinkMatrix m = build_link_matrix(two_comm_set());
  EXPECT_FALSE(m.observed());
  EXPECT_TRUE(m.node_links.empty());
}

// A slow link under the cost bar is not a finding: the verdict stays healthy and the
// text does not say the links look consistent; it is named with its evidence and next
// command, in the text and under links.below_cost in the JSON.
TEST(LinkMatrix, ASlowLinkBelowTheCostBarIsNamedButIsNoFinding) {
  Report r;
  r.job = "j";
  r.ranks = 16;
  r.nodes = {"node1", "node2", "node3", "node4"};
  r.links.source = "nccl_profiler";
  Finding f;
  f.kind = "slow_link";
  f.subkind = "intra_node";
  f.nodes = {"node2"};
  f.ranks = {5, 6};
  f.cost_s = 0.05;
  f.evidence = "Inside node2, the path rank 5 -> rank 6 reaches 1.0 GB/s vs 4.0 GB/s.";
  f.next_command = "nccl_bench sendrecv -g 2";
  r.links_below_cost.push_back(f);
  std::ostringstream text;
  render_text(r, text);
  EXPECT_NE(text.str().find("verdict: HEALTHY"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("links and GPUs look consistent"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("slow link below the cost bar (not a finding): intra_node node2 ranks "
                            "5,6, cost 0.050 s. Inside node2"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("next: nccl_bench sendrecv -g 2"), std::string::npos) << text.str();
  const nlohmann::json j = report_to_json(r);
  EXPECT_TRUE(j["findings"].empty());
  ASSERT_EQ(j["links"]["below_cost"].size(), 1u) << j["links"].dump();
  EXPECT_EQ(j["links"]["below_cost"][0]["subkind"], "intra_node");
  EXPECT_EQ(j["links"]["below_cost"][0]["ranks"], nlohmann::json::array({5, 6}));
  // None: an empty list, and the usual sentence.
  r.links_below_cost.clear();
  std::ostringstream clean;
  render_text(r, clean);
  EXPECT_NE(clean.str().find("links and GPUs look consistent"), std::string::npos) << clean.str();
  EXPECT_TRUE(report_to_json(r)["links"]["below_cost"].empty());
}

}  // namespace
}  // namespace ringside::analysis::test
