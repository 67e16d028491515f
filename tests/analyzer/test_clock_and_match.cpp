// Units: clock alignment, op matching, lateness, GPU summaries, link classes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <string>

#include "clock/clock_align.h"
#include "load/gpu_summary.h"
#include "match/group_table.h"
#include "match/rank_stats.h"
#include "ringside/trace_reader.h"
#include "synth/synth_model.h"
#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

TraceSet load(const std::string& dir) {
  Progress quiet(false);
  auto s = load_trace_set(dir, LoadOptions{}, quiet);
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? std::move(s.value()) : TraceSet{};
}

TEST(ClockAlign, RecoversNodeOffsetsWithinHalfAMillisecond) {
  TempDir dir("clock");
  auto spec = small_spec(dir.path());
  spec.ranks = 32;
  spec.nodes = 8;
  spec.clock_offset_ms = 50;
  ASSERT_TRUE(synth::write_synth_traces(spec).ok());
  TraceSet set = load(dir.path());
  ClockAlignment a = align_clocks(set);
  ASSERT_TRUE(a.aligned);
  synth::SynthModel model(spec);
  const double ref = model.clock_offset_ns(0) / 1e6;
  ASSERT_EQ(a.nodes.size(), 8u);
  double largest = 0;
  for (int n = 0; n < 8; ++n) {
    const double truth = model.clock_offset_ns(n) / 1e6 - ref;
    largest = std::max(largest, std::abs(truth));
    EXPECT_NEAR(a.nodes[static_cast<size_t>(n)].offset_ms, truth, 0.5) << "node" << n + 1;
  }
  EXPECT_GT(largest, 10.0);  // the test really had offsets to find
}

TEST(ClockAlign, RobustToAStragglerAndAHang) {
  TempDir dir("clock-robust");
  auto spec = small_spec(dir.path());
  spec.clock_offset_ms = 40;
  spec.faults = {*synth::parse_fault("straggler:rank=1,factor=2"),
                 *synth::parse_fault("stop:rank=6,op=60")};
  ASSERT_TRUE(synth::write_synth_traces(spec).ok());
  TraceSet set = load(dir.path());
  ClockAlignment a = align_clocks(set);
  synth::SynthModel model(spec);
  EXPECT_NEAR(a.nodes[1].offset_ms, (model.clock_offset_ns(1) - model.clock_offset_ns(0)) / 1e6,
              0.5);
}

// Ranks 0-3 on node1, 4-7 on node2; comm 1 is node1's ranks, comm 2 node2's, comm 3
// every rank.  End times: rank r ends each collective `skew[r]` after the others,
// and node2's clock runs `node2_ms` ahead.
TraceSet clock_set(const std::vector<double>& skew_ms, double node2_ms, bool world) {
  TraceSet set;
  set.world_size = 8;
  set.nodes = {"node1", "node2"};
  set.node_ranks = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  auto add_comm = [&](uint64_t id, std::vector<int64_t> members) {
    CommInfo c;
    c.id = id;
    c.index = static_cast<int>(set.comms.size());
    c.nranks = static_cast<int>(members.size());
    c.present = c.nranks;
    c.members = std::move(members);
    set.comm_index[id] = c.index;
    set.comms.push_back(std::move(c));
  };
  add_comm(1, {0, 1, 2, 3});
  add_comm(2, {4, 5, 6, 7});
  if (world) add_comm(3, {0, 1, 2, 3, 4, 5, 6, 7});
  for (int64_t r = 0; r < 8; ++r) {
    RankInfo ri;
    ri.rank = r;
    ri.has_file = true;
    ri.node_index = r < 4 ? 0 : 1;
    const double local_ms = skew_ms[static_cast<size_t>(r)] + (r < 4 ? 0 : node2_ms);
    for (uint64_t seq = 0; seq < 20; ++seq) {
      const auto end = static_cast<int64_t>((static_cast<double>(seq) * 10 + local_ms) * 1e6);
      ri.clock_samples.push_back({r < 4 ? 1u : 2u, seq, end});
      if (world) ri.clock_samples.push_back({3, seq, end + 5'000'000});
    }
    set.ranks.push_back(std::move(ri));
  }
  return set;
}

TEST(ClockAlign, RanksOfOneNodeThatEndApartDoNotMoveTheirNode) {
  // Rank 5 ends every collective 2 ms after its node's other ranks (a busy host, a
  // ring's last step): that is not node2's clock.
  TraceSet set = clock_set({0, 0, 0, 0, 0, 2, 0, 0}, 30, true);
  ClockAlignment a = align_clocks(set);
  ASSERT_TRUE(a.aligned);
  EXPECT_EQ(a.reference_node, "node1");
  EXPECT_TRUE(a.unaligned_nodes.empty());
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_NEAR(a.nodes[1].offset_ms, 30, 0.1);
  for (int r = 4; r < 8; ++r)
    EXPECT_NEAR(set.ranks[static_cast<size_t>(r)].offset_ns / 1e6, 30, 0.1);
}

TEST(ClockAlign, NodesThatShareNoCollectiveAreNamedAndLeftAlone) {
  // No collective spans the nodes (a pipeline job whose stages meet only in
  // send/recv): nothing tells node2's clock, however its ranks disagree.
  TraceSet set = clock_set({0, 0, 0, 0, 0, 2, 0, -1}, 30, false);
  ClockAlignment a = align_clocks(set);
  EXPECT_FALSE(a.aligned);
  EXPECT_EQ(a.unaligned_nodes, std::vector<std::string>{"node2"});
  for (const auto& ri : set.ranks) EXPECT_EQ(ri.offset_ns, 0) << "rank " << ri.rank;
}

TEST(GroupTable, MatchesEveryOpAndMeasuresLateness) {
  TempDir dir("match");
  auto spec = small_spec(dir.path());
  spec.ranks = 8;
  spec.nodes = 2;
  spec.tp = 2;
  spec.pp = 2;
  spec.faults = {*synth::parse_fault("straggler:rank=3,factor=1.3")};
  ASSERT_TRUE(synth::write_synth_traces(spec).ok());
  TraceSet set = load(dir.path());
  align_clocks(set);
  GroupTable table(set);
  for (const auto& ri : set.ranks) {
    auto r = trace::TraceReader::open(ri.path);
    ASSERT_TRUE(r.ok());
    auto rows = read_op_rows(*r.value(), ri.first_row, ri.op_count);
    ASSERT_TRUE(rows.ok());
    ASSERT_TRUE(table.add_rank(ri, rows.value()).ok());
  }
  table.finalize();
  size_t groups = 0;
  for (const auto& c : set.comms) {
    for (const auto& g : table.comms()[static_cast<size_t>(c.index)].groups) {
      EXPECT_TRUE(g.complete(c.present));
      EXPECT_FALSE(g.mismatch);
      ++groups;
    }
  }
  EXPECT_GT(groups, 100u);
  EXPECT_EQ(table.unmatched_p2p(), 0u);
  EXPECT_EQ(table.p2p().size(), 4u);  // stage 0 -> stage 1, one pair per pipeline comm
  RankStatsPass stats(table);
  for (const auto& ri : set.ranks) {
    auto r = trace::TraceReader::open(ri.path);
    auto rows = read_op_rows(*r.value(), ri.first_row, ri.op_count);
    ASSERT_TRUE(rows.ok());
    ASSERT_TRUE(stats.add_rank(ri, rows.value()).ok());
  }
  // The straggler's gaps exceed its peers'; its victims wait longest but are not late.
  const Lateness& slow = stats.ranks()[3].total;
  EXPECT_GT(slow.t_stat(), 10);
  EXPECT_GT(slow.positive_fraction(), 0.9);
  for (int r : {0, 1, 2, 4, 5, 6, 7}) {
    EXPECT_LT(stats.ranks()[static_cast<size_t>(r)].total.mean_excess(), 0.2 * slow.mean_excess())
        << r;
  }
  EXPECT_GT(stats.ranks()[2].total.wait_ns, slow.wait_ns);  // its TP partner waits for it
}

// A job with ops on several streams (gradient buckets beside the backward pass), where
// members' readings of their own compute differ on some ops and not on others.
class GroupTableReadings : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = small_spec(dir_.path());
    spec.tp = 2;
    spec.comm_streams = true;
    spec.overlap = true;
    ASSERT_TRUE(synth::write_synth_traces(spec).ok());
    set_ = load(dir_.path());
    align_clocks(set_);
    for (const auto& ri : set_.ranks) {
      auto r = trace::TraceReader::open(ri.path);
      ASSERT_TRUE(r.ok());
      auto rows = read_op_rows(*r.value(), ri.first_row, ri.op_count);
      ASSERT_TRUE(rows.ok());
      rows_.push_back(std::move(rows.value()));
    }
  }
  // What ranks [first, last) add to a table: `gaps` re-measures their compute knowing
  // what `from` matched (the second pass of analyze_directory).
  void add(GroupTable& t, size_t first, size_t last, bool gaps = false) {
    for (size_t r = first; r < last; ++r) {
      const Status s =
          gaps ? t.add_gaps(set_.ranks[r], rows_[r]) : t.add_rank(set_.ranks[r], rows_[r]);
      ASSERT_TRUE(s.ok()) << s.message();
    }
  }
  // Ranks [0, 4) and [4, 8) matched apart and merged in process order, in 3 pieces.
  void match_in_halves(GroupTable& merged) {
    GroupTable a(set_), b(set_);
    add(a, 0, 4);
    add(b, 4, 8);
    for (size_t piece = 0; piece < 3; ++piece) {
      for (const GroupTable* t : {&a, &b}) {
        ByteWriter w;
        t->save_partial(w, piece, 3);
        const std::string bytes = w.take();
        ByteReader r(bytes);
        merged.merge_partial(r, piece, 3);
        EXPECT_TRUE(r.done());
      }
    }
    merged.finalize();
  }
  static void expect_same_stats(const GapStats& want, const GapStats& got,
                                const std::string& where) {
    EXPECT_EQ(want.sum, got.sum) << where;
    EXPECT_EQ(want.min, got.min) << where;
    EXPECT_EQ(want.max, got.max) << where;
    EXPECT_TRUE(want.sq_sum.value == got.sq_sum.value) << where;
  }
  static void expect_same_gaps(const GroupTable& want, const GroupTable& got) {
    for (size_t ci = 0; ci < want.comms().size(); ++ci) {
      const CommGroups& w = want.comms()[ci];
      const CommGroups& g = got.comms()[ci];
      ASSERT_EQ(w.groups.size(), g.groups.size());
      for (size_t i = 0; i < w.groups.size(); ++i) {
        EXPECT_EQ(w.groups[i].gaps, g.groups[i].gaps);
        EXPECT_EQ(w.groups[i].split, g.groups[i].split);
        for (int k = 0; k < kReadings; ++k) {
          expect_same_stats(w.reading(w.groups[i], k), g.reading(g.groups[i], k),
                            std::to_string(ci) + " " + std::to_string(i) + " " + std::to_string(k));
        }
      }
    }
  }

  TempDir dir_{"readings"};
  TraceSet set_;
  std::vector<std::vector<trace::OpRecord>> rows_;
};

TEST_F(GroupTableReadings, KeepsEveryReadingOfEveryMember) {
  GroupTable table(set_);
  add(table, 0, set_.ranks.size());
  // Each reading over the members, straight from each rank's own compute.
  std::map<std::pair<int, uint64_t>, std::array<GapStats, kReadings>> want;
  for (size_t r = 0; r < set_.ranks.size(); ++r) {
    const OwnCompute own(set_.ranks[r], rows_[r]);
    RankComms comms(set_, set_.ranks[r].rank);
    for (uint32_t i : own.order()) {
      const trace::OpRecord& op = rows_[r][i];
      if (!own.before(i) || trace::is_p2p(static_cast<trace::OpKind>(op.op))) continue;
      auto& stats = want[{comms.of(op.comm_id).index, op.seq}];
      for (size_t k = 0; k < kReadings; ++k) stats[k].add((*own.before(i))[k]);
    }
  }
  size_t apart = 0;
  for (const auto& [at, stats] : want) {
    const GroupAgg* g = table.group(at.first, at.second);
    ASSERT_NE(g, nullptr);
    const CommGroups& cg = table.comms()[static_cast<size_t>(at.first)];
    apart += g->other_readings >= 0;
    for (int k = 0; k < kReadings; ++k) {
      expect_same_stats(
          stats[static_cast<size_t>(k)], cg.reading(*g, k),
          std::to_string(at.first) + " " + std::to_string(at.second) + " " + std::to_string(k));
    }
  }
  // Both kinds of op are there: readings kept apart, and readings that are reading 0's.
  EXPECT_GT(apart, 0u);
  EXPECT_LT(apart, want.size());
}

TEST_F(GroupTableReadings, PartialsMergeIntoTheTableOnePassBuilds) {
  GroupTable whole(set_);
  add(whole, 0, set_.ranks.size());
  whole.finalize();
  GroupTable merged(set_);
  match_in_halves(merged);
  expect_same_gaps(whole, merged);
  ASSERT_TRUE(whole.measures_again());
  // The second pass: each half re-measured on a table of its own, merged in place on the first.
  whole.reset_gaps();
  add(whole, 0, set_.ranks.size(), true);
  GroupTable second(set_);
  match_in_halves(second);
  merged.reset_gaps();
  add(merged, 0, 4, true);
  second.reset_gaps();
  add(second, 4, 8, true);
  for (size_t piece = 0; piece < 3; ++piece) {
    ByteWriter mine, theirs;
    merged.save_gaps(mine, piece, 3);
    second.save_gaps(theirs, piece, 3);
    merged.reset_gaps(piece, 3);
    for (ByteWriter* w : {&mine, &theirs}) {
      const std::string bytes = w->take();
      ByteReader r(bytes);
      merged.merge_gaps(r, piece, 3);
      EXPECT_TRUE(r.done());
    }
  }
  expect_same_gaps(whole, merged);
}

TEST(GpuSummary, CountsSlowdownsAndCounterGrowth) {
  std::vector<trace::SampleRecord> s(10);
  for (size_t i = 0; i < s.size(); ++i) {
    s[i].valid = 0x1ff;
    s[i].sm_clock_mhz = i < 5 ? 1980 : 1200;
    s[i].clock_event_reasons = i < 5 ? 0x1 : 0x40;  // idle is not a slowdown
    s[i].ecc_uncorrected = i < 8 ? 0 : 3;
    s[i].remapped_rows = i < 8 ? 2 : 3;
  }
  GpuSummary g = summarize_samples(s);
  EXPECT_DOUBLE_EQ(g.slowdown_fraction(), 0.5);
  EXPECT_EQ(g.slowdown_reasons, 0x40u);
  EXPECT_EQ(g.ecc_uncorrected_last, 3u);
  EXPECT_EQ(g.remapped_first, 2u);
  EXPECT_EQ(g.remapped_last, 3u);
  EXPECT_EQ(slowdown_reason_names(0x40 | 0x20), "SW thermal slowdown, HW thermal slowdown");
}

TEST(GpuSummary, SeriesAveragesRunsOfSamplesAndIsBounded) {
  // 96 samples: 24 runs of 4.  Clocks read in all, power in none, temperature rising.
  std::vector<trace::SampleRecord> s(96);
  for (size_t i = 0; i < s.size(); ++i) {
    s[i].t_ns = static_cast<int64_t>(i) * 100'000'000;
    s[i].valid = trace::kValidClocks | trace::kValidTemperature | trace::kValidUtilization;
    s[i].sm_clock_mhz = i % 2 ? 1000 : 2000;
    s[i].temperature_c = static_cast<uint32_t>(40 + i / 4);
    s[i].util_gpu_pct = 50;
  }
  GpuSummary g = summarize_samples(s);
  ASSERT_EQ(g.series.size(), kGpuSeriesPoints);
  for (size_t p = 0; p < g.series.size(); ++p) {
    EXPECT_FLOAT_EQ(g.series[p].sm_clock_mhz, 1500);
    EXPECT_FLOAT_EQ(g.series[p].temperature_c, static_cast<float>(40 + p));
    EXPECT_TRUE(std::isnan(g.series[p].power_w));  // never read
    EXPECT_EQ(g.series[p].t_ns, static_cast<int64_t>(p * 4 + 2) * 100'000'000);
  }
  // Fewer samples than points: one point each.
  s.resize(5);
  EXPECT_EQ(summarize_samples(s).series.size(), 5u);
  EXPECT_TRUE(summarize_samples({}).series.empty());
}

TEST(Lateness, TStatistic) {
  Lateness l;
  for (int i = 0; i < 100; ++i) {
    const double e = (i % 2 ? 1.0 : -1.0);
    l.groups++;
    l.excess_sum += e;
    l.excess_sq_sum += e * e;
  }
  EXPECT_NEAR(l.t_stat(), 0.0, 1e-9);
  l.excess_sum += 50;  // shift the mean
  EXPECT_GT(l.t_stat(), 3.0);
}

}  // namespace
}  // namespace ringside::analysis::test
