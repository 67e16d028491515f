// `ringside synth`: fault parsing, validation, and the timing model's physics.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ringside/trace_reader.h"
#include "ringside/trace_reader_cache.h"
#include "ringside/trace_writer.h"
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
  s.faults.clear();
  s.grow_steps = s.steps;
  EXPECT_NE(synth::validate(s).message().find("--grow-steps"), std::string::npos);
  s.grow_steps = 1;
  s.grow_every_s = 0;
  EXPECT_NE(synth::validate(s).message().find("--grow-every"), std::string::npos);
  s.grow_every_s = 1;
  EXPECT_TRUE(synth::validate(s).ok());
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

// The link rows of a file, in a comparable order.
std::vector<std::tuple<int64_t, uint64_t, int32_t, uint8_t, uint8_t, uint64_t, int64_t>> link_rows(
    const trace::TraceReader& r) {
  std::vector<std::tuple<int64_t, uint64_t, int32_t, uint8_t, uint8_t, uint64_t, int64_t>> out;
  const auto links = r.links();
  for (const trace::LinkRecord& l : links.value())
    out.emplace_back(l.t_ns, l.comm_hash, l.peer, l.channel, l.is_send, l.bytes, l.net_ns);
  std::sort(out.begin(), out.end());
  return out;
}

// --grow-steps: the last steps reach the files one round at a time, each ending in a
// flush that a reader kept open sees (as `ringside watch` follows a job), with the link
// windows closed by then; the files end as those written at once.
TEST(SynthWriter, GrowingFilesEndAsThoseWrittenAtOnce) {
  TempDir grown_dir("synth-grown"), whole_dir("synth-whole");
  auto spec = small_spec(grown_dir.path());
  spec.live = true;
  spec.links = true;
  spec.compute_ms = 700;  // steps of about one flush window: most rounds close one
  spec.steps = 12;
  spec.grow_steps = 6;
  spec.grow_every_s = 0.01;
  trace::TraceReaderCache cache(4);
  const std::string rank0 = grown_dir.path() + "/" + trace::trace_file_name(spec.job_id, 0);
  std::vector<int> rounds;
  std::vector<uint64_t> ops_seen, flushes_seen, links_seen;
  auto w = synth::write_synth_traces(spec, {}, [&](int written, int steps) {
    rounds.push_back(written);
    EXPECT_EQ(steps, spec.steps);
    auto r = cache.open(rank0);
    ASSERT_TRUE(r.ok()) << r.message();
    ops_seen.push_back(r.value()->op_count());
    flushes_seen.push_back(r.value()->stats().value().size());
    links_seen.push_back(r.value()->links().value().size());
  });
  ASSERT_TRUE(w.ok()) << w.message();
  EXPECT_EQ(rounds, (std::vector<int>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(cache.files_opened(), 1u) << "one reader, kept open";
  ASSERT_EQ(ops_seen.size(), 6u);
  for (size_t k = 1; k < ops_seen.size(); ++k) {
    EXPECT_GT(ops_seen[k], ops_seen[k - 1]) << "round " << k;
    EXPECT_EQ(flushes_seen[k], flushes_seen[k - 1] + 1) << "round " << k;
    EXPECT_GE(links_seen[k], links_seen[k - 1]) << "round " << k;
  }
  EXPECT_GT(links_seen.back(), links_seen.front()) << "link windows closed while it grew";
  spec.out_dir = whole_dir.path();
  spec.grow_steps = 0;
  auto whole = synth::write_synth_traces(spec);
  ASSERT_TRUE(whole.ok()) << whole.message();
  EXPECT_EQ(w->ops, whole->ops);
  auto a = trace::TraceReader::open(rank0);
  auto b =
      trace::TraceReader::open(whole_dir.path() + "/" + trace::trace_file_name(spec.job_id, 0));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(ops_seen.back(), 0u);
  EXPECT_LT(ops_seen.back(), a.value()->op_count()) << "the last step came at the end";
  EXPECT_EQ(a.value()->op_count(), b.value()->op_count());
  EXPECT_EQ(a.value()->samples()->size(), b.value()->samples()->size());
  EXPECT_EQ(a.value()->stats()->size(), b.value()->stats()->size() + 6);
  EXPECT_LT(links_seen.back(), a.value()->links()->size()) << "the last window came at the end";
  EXPECT_EQ(link_rows(*a.value()), link_rows(*b.value()));
}

// --links: each rank's rows are its transfers to ring neighbours on other nodes; a
// link faster than the ring's slowest waits for its peer the rest of the op's window.
TEST(SynthWriter, LinkRowsFollowTheRingAndTheSlowLinkSetsTheWindow) {
  TempDir dir("synth-links");
  auto spec = small_spec(dir.path());
  spec.ranks = 16;
  spec.nodes = 4;
  spec.steps = 10;
  spec.links = true;
  spec.faults = {*synth::parse_fault("slow_nic:node=node2,factor=4")};
  ASSERT_TRUE(synth::write_synth_traces(spec).ok());
  struct Sums {
    uint64_t ops = 0, bytes = 0;
    int64_t net = 0, peer_wait = 0, last_t = -1;
    bool ordered = true;
  };
  // rank -> (peer, is_send) -> sums over channels and windows
  std::map<int, std::map<std::pair<int, int>, Sums>> rows;
  for (int rank = 0; rank < 16; ++rank) {
    auto r = trace::TraceReader::open(dir.path() + "/" + trace::trace_file_name(spec.job_id, rank));
    ASSERT_TRUE(r.ok()) << r.message();
    auto links = r.value()->links();
    ASSERT_TRUE(links.ok()) << links.message();
    for (const trace::LinkRecord& l : *links) {
      EXPECT_EQ(l.nranks, 16);
      EXPECT_EQ(l.rank, rank) << "the world's comm ranks are the global ranks";
      EXPECT_EQ(l.n_nodes, 4);
      Sums& s = rows[rank][{l.peer, l.is_send}];
      if (l.channel == 0) {
        s.ordered = s.ordered && l.t_ns > s.last_t;
        s.last_t = l.t_ns;
        s.ops += l.ops;
      }
      s.bytes += l.bytes;
      s.net += l.net_ns;
      s.peer_wait += l.peer_wait_ns;
    }
  }
  // Ranks in the middle of a node have no neighbour on another node.
  for (int rank : {1, 2, 5, 6, 9, 10, 13, 14}) EXPECT_EQ(rows.count(rank), 0u) << rank;
  // The last rank of each node sends to the next node, the first receives from the previous.
  for (int last : {3, 7, 11, 15}) {
    const int next = (last + 1) % 16;
    ASSERT_EQ(rows[last].size(), 1u) << last;
    const Sums& send = rows[last][{next, 1}];
    const Sums& recv = rows[next][{last, 0}];
    EXPECT_EQ(send.ops, 40u) << "four gradient buckets per step, on the world";
    EXPECT_TRUE(send.ordered) << "one row per window, in time order";
    EXPECT_EQ(send.bytes, recv.bytes);
    EXPECT_GT(send.net, 0);
    EXPECT_GE(recv.net, send.net) << "a receive waits in the network for its whole window";
  }
  // node2's NIC is slow: the paths into and out of it transmit 4x as long, and the
  // healthy links spend the difference waiting for their peers.
  const Sums& into = rows[3][{4, 1}];
  const Sums& out = rows[7][{8, 1}];
  const Sums& healthy = rows[11][{12, 1}];
  EXPECT_NEAR(static_cast<double>(into.net) / static_cast<double>(healthy.net), 4.0, 0.2);
  EXPECT_NEAR(static_cast<double>(out.net) / static_cast<double>(healthy.net), 4.0, 0.2);
  EXPECT_LT(into.peer_wait, into.net / 10);
  EXPECT_GT(healthy.peer_wait, healthy.net * 2);
}

}  // namespace
}  // namespace ringside::analysis::test
