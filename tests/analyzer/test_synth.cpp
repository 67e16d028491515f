// `ringside synth`: fault parsing, validation, and the timing model's physics.
#include <gtest/gtest.h>

#include <map>

#include "ringside/trace_reader.h"
#include "synth/synth_model.h"
#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

TEST(SynthFault, ParsesEveryKind) {
  for (const char* text :
       {"straggler:rank=1,factor=1.2", "throttle:rank=2", "imbalance:amount=0.3",
        "heavy_stage:stage=1,factor=2", "slow_nic:node=node1,factor=3",
        "slow_pair:a=node1,b=node2,factor=3", "stop:rank=1,op=3", "all_stuck:op=2",
        "stall:rank=0,op=1", "desync:rank=1,op=4", "crash:rank=1,op=4", "missing:rank=3",
        "xid:rank=1,code=48,step=2", "ecc:rank=1"}) {
    auto f = synth::parse_fault(text);
    EXPECT_TRUE(f.ok()) << text << ": " << f.message();
  }
  auto f = synth::parse_fault("straggler:rank=5,factor=1.25");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->rank, 5);
  EXPECT_DOUBLE_EQ(f->factor, 1.25);
}

TEST(SynthFault, RejectsBadInputWithAMessage) {
  struct Case {
    const char* text;
    const char* mentions;
  };
  for (const Case& c :
       {Case{"nope:rank=1", "unknown fault kind"}, Case{"straggler:rank=1", "missing 'factor='"},
        Case{"straggler:rank=x,factor=2", "rank='x'"}, Case{"straggler:rank=1,factor=0.5", ">= 1"},
        Case{"stop:rank=1,op=2,extra=3", "unknown key 'extra'"},
        Case{"stop:rank1", "not key=value"}, Case{"stop:rank=1,op=12abc", "op='12abc'"}}) {
    auto f = synth::parse_fault(c.text);
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_NE(f.message().find(c.mentions), std::string::npos) << f.message();
  }
}

TEST(SynthSpec, ValidatesShapeAndFaults) {
  synth::SynthSpec s;
  s.out_dir = "/tmp/x";
  s.ranks = 8;
  s.nodes = 3;
  EXPECT_FALSE(synth::validate(s).ok());
  s.nodes = 2;
  EXPECT_TRUE(synth::validate(s).ok());
  s.faults.push_back(*synth::parse_fault("straggler:rank=8,factor=2"));
  EXPECT_NE(synth::validate(s).message().find("rank 8"), std::string::npos);
  s.faults = {*synth::parse_fault("slow_nic:node=node9,factor=2")};
  EXPECT_NE(synth::validate(s).message().find("node9"), std::string::npos);
  s.faults = {*synth::parse_fault("stop:rank=1,op=2"), *synth::parse_fault("crash:rank=2,op=2")};
  EXPECT_FALSE(synth::validate(s).ok());
}

// Every member of a collective finishes at the same true time, which is the
// last arrival plus the transfer time: the slow rank has the shortest op.
TEST(SynthModel, CollectivesEndTogetherAfterTheLastArrival) {
  auto spec = small_spec("/unused");
  spec.faults = {*synth::parse_fault("straggler:rank=2,factor=1.5")};
  synth::SynthModel model(spec);
  struct Sink : synth::OpSink {
    std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<int, trace::OpRecord>>> ops;
    void op(int rank, const trace::OpRecord& op) override {
      ops[{op.comm_id, op.seq}].emplace_back(rank, op);
    }
  } sink;
  model.run(sink);
  ASSERT_FALSE(sink.ops.empty());
  int straggler_shortest = 0;
  for (const auto& [key, members] : sink.ops) {
    ASSERT_EQ(members.size(), 8u);
    int64_t last = 0, shortest_rank = -1, shortest = INT64_MAX;
    for (const auto& [rank, op] : members) {
      EXPECT_EQ(op.t_dev_end_ns, members[0].second.t_dev_end_ns);
      last = std::max(last, op.t_dev_start_ns);
      if (op.t_dev_end_ns - op.t_dev_start_ns < shortest) {
        shortest = op.t_dev_end_ns - op.t_dev_start_ns;
        shortest_rank = rank;
      }
    }
    EXPECT_GT(members[0].second.t_dev_end_ns, last);
    straggler_shortest += shortest_rank == 2;
  }
  EXPECT_GT(straggler_shortest, static_cast<int>(sink.ops.size() * 9 / 10));
}

TEST(SynthWriter, WritesOneReadableTracePerRank) {
  TempDir dir("synth-files");
  auto spec = small_spec(dir.path());
  spec.faults = {*synth::parse_fault("missing:rank=6")};
  auto w = synth::write_synth_traces(spec);
  ASSERT_TRUE(w.ok()) << w.message();
  EXPECT_EQ(w->files, 7);
  auto listing = trace::list_trace_dir(dir.path());
  ASSERT_TRUE(listing.ok()) << listing.message();
  EXPECT_EQ(listing->files.size(), 7u);
  EXPECT_EQ(listing->missing_ranks, std::vector<int64_t>{6});
  auto r = trace::TraceReader::open(listing->files[0].path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value()->meta().producer, "synth");
  EXPECT_EQ(r.value()->op_count(), w->ops / 7);
  EXPECT_FALSE(r.value()->samples()->empty());
  // A second run into the same directory is refused instead of mixing files.
  EXPECT_FALSE(synth::write_synth_traces(spec).ok());
}

}  // namespace
}  // namespace ringside::analysis::test
