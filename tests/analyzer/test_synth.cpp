// `ringside synth`: fault parsing, validation, and the timing model's physics.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "ringside/trace_reader.h"
#include "synth/synth_model.h"
#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

TEST(SynthFault, ParsesEveryKind) {
  for (const char* text :
       {"straggler:rank=1,factor=1.2", "throttle:rank=2", "imbalance:amount=0.3",
        "heavy_stage:stage=1,factor=2", "heavy_replica:replica=1,factor=1.2",
        "slow_node:node=node2,factor=1.3", "slow_nic:node=node1,factor=3",
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
  s.faults = {*synth::parse_fault("slow_node:node=node3,factor=2")};
  EXPECT_NE(synth::validate(s).message().find("node3"), std::string::npos);
  // 8 ranks, tp 2: replicas 0..3.
  s.tp = 2;
  s.faults = {*synth::parse_fault("heavy_replica:replica=4,factor=2")};
  EXPECT_NE(synth::validate(s).message().find("replica 4"), std::string::npos);
  s.faults = {*synth::parse_fault("heavy_replica:replica=3,factor=2")};
  EXPECT_TRUE(synth::validate(s).ok());
}

// Every op of a run, per rank, in the order the model issued them.
struct RankOps : synth::OpSink {
  std::map<int, std::vector<trace::OpRecord>> ops;
  void op(int rank, const trace::OpRecord& op) override { ops[rank].push_back(op); }
};

TEST(SynthModel, UniqueIdCommunicatorsHaveNoParent) {
  auto spec = small_spec("/unused");
  spec.tp = 2;
  for (bool unique : {false, true}) {
    spec.unique_ids = unique;
    synth::SynthModel model(spec);
    ASSERT_GT(model.comms().size(), 1u);
    for (size_t c = 1; c < model.comms().size(); ++c) {
      const auto& comm = model.comms()[c];
      EXPECT_EQ(comm.parent == 0, unique);
      EXPECT_EQ(comm.origin == trace::CommOrigin::kInitRank, unique);
      EXPECT_EQ(comm.color < 0, unique);
    }
  }
}

// Ops on one stream run one after the other; with --comm-streams each
// communicator has its own stream, and with --overlap the gradient buckets run on
// a stream of their own while the main stream goes on with the backward pass.
TEST(SynthModel, StreamsSerializeAndBucketsOverlapTheBackwardPass) {
  auto spec = small_spec("/unused");
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  spec.steps = 10;
  spec.inter_gbps = 5;  // buckets take about as long as the compute they overlap
  for (int mode = 0; mode < 3; ++mode) {
    spec.comm_streams = mode == 1;
    spec.overlap = mode == 2;
    synth::SynthModel model(spec);
    RankOps sink;
    model.run(sink);
    std::map<uint64_t, size_t> size_of;  // comm id -> members
    for (const auto& c : model.comms()) size_of[c.id] = c.members.size();
    size_t overlapped = 0;
    for (const auto& [rank, ops] : sink.ops) {
      std::map<uint64_t, std::set<uint64_t>> comms_on;  // stream -> comm ids
      std::map<uint64_t, int64_t> stream_end;
      for (const auto& op : ops) {
        comms_on[op.stream].insert(op.comm_id);
        int64_t& end = stream_end[op.stream];
        EXPECT_GE(op.t_dev_start_ns, end) << "rank " << rank << ": ops overlap on one stream";
        end = op.t_dev_end_ns;
        if (mode != 2 || size_of[op.comm_id] != 8) continue;  // buckets: the 8-rank dp groups
        for (const auto& o : ops) {
          if (o.stream != op.stream && o.t_dev_start_ns > op.t_dev_start_ns &&
              o.t_dev_start_ns < op.t_dev_end_ns) {
            ++overlapped;
            break;
          }
        }
      }
      // world, tp and dp groups: one stream, one per communicator, or main + buckets.
      EXPECT_EQ(comms_on.size(), mode == 0 ? 1u : mode == 1 ? 3u : 2u) << "mode " << mode;
      if (mode == 1) {
        for (const auto& [stream, comms] : comms_on) EXPECT_EQ(comms.size(), 1u);
      }
    }
    if (mode == 2) {
      EXPECT_GT(overlapped, 0u);
    }
  }
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
