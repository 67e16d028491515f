// On the sim, 8 ranks: the probe changes nothing the job sees, and every op
// is in every rank's trace with its comm, seq, sizes and device times.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "process_util.h"
#include "ringside/bandwidth.h"
#include "trace_helpers.h"

namespace ringside::probe::testing {
namespace {

using trace::OpKind;

std::vector<std::string> probe_env(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> env{Paths::sim_env(), "LD_PRELOAD=" + Paths::probe(),
                               "RINGSIDE_OUTPUT=" + dir, "RINGSIDE_JOB_ID=probetest",
                               "RINGSIDE_FLUSH_INTERVAL=200ms"};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<std::string> simrun(int n, std::vector<std::string> program) {
  std::vector<std::string> argv{
      Paths::simrun(), "-n", std::to_string(n), "--nodes", "2", "--timeout", "90", "--"};
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

// Runs `program` on `n` ranks without and then with the probe (traces into
// `dir`).  The job must succeed both times and, when `same_output`, print the
// same lines.  Returns the traces.
std::vector<RankTrace> traced_run(int n, const std::vector<std::string>& program,
                                  const std::string& dir, bool same_output) {
  const Exit plain = run(simrun(n, program), {Paths::sim_env()});
  const Exit probed = run(simrun(n, program), probe_env(dir));
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(probed.status, 0) << probed.err;
  if (same_output) {
    EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out));
  }
  return load_traces(dir);
}

// Checks that every communicator's collectives have seq 0..n-1 on each rank
// and the same per-comm counts, kinds and sizes on all member ranks.
void expect_aligned(const std::vector<RankTrace>& traces) {
  std::map<uint64_t, std::vector<std::vector<trace::OpRecord>>> per_comm;
  for (const auto& t : traces) {
    for (auto& [comm, ops] : t.ops_by_comm()) {
      std::vector<trace::OpRecord> colls;
      for (const auto& o : ops) {
        // Calls NCCL rejected are not ops of the communicator and give their seq back.
        if (!trace::is_p2p(static_cast<OpKind>(o.op)) && !(o.flags & trace::kFlagNcclError))
          colls.push_back(o);
      }
      std::sort(colls.begin(), colls.end(), [](auto& a, auto& b) { return a.seq < b.seq; });
      for (size_t i = 0; i < colls.size(); ++i) {
        ASSERT_EQ(colls[i].seq, i)
            << t.path << " comm " << comm << ": collective seqs must be 0..n-1";
      }
      per_comm[comm].push_back(colls);
    }
  }
  for (auto& [comm, ranks] : per_comm) {
    if (comm == 0) continue;  // errors on a NULL comm: no communicator
    for (size_t r = 1; r < ranks.size(); ++r) {
      ASSERT_EQ(ranks[r].size(), ranks[0].size())
          << "comm " << comm << ": op counts differ across ranks";
      for (size_t i = 0; i < ranks[r].size(); ++i) {
        EXPECT_EQ(ranks[r][i].op, ranks[0][i].op) << "comm " << comm << " seq " << i;
        EXPECT_EQ(ranks[r][i].count, ranks[0][i].count) << "comm " << comm << " seq " << i;
        EXPECT_EQ(ranks[r][i].bytes, ranks[0][i].bytes) << "comm " << comm << " seq " << i;
      }
    }
  }
}

void expect_device_timed(const std::vector<RankTrace>& traces) {
  for (const auto& t : traces) {
    for (const auto& o : t.ops) {
      if (o.flags & trace::kFlagNcclError) continue;
      ASSERT_TRUE(o.flags & trace::kFlagDeviceTimed)
          << t.path << " seq " << o.seq << " op " << int(o.op);
      EXPECT_GE(o.t_dev_end_ns, o.t_dev_start_ns);
      EXPECT_GE(o.t_exit_ns, o.t_enter_ns);
      EXPECT_EQ(o.status, static_cast<uint8_t>(trace::OpStatus::kComplete));
    }
  }
}

TEST(ProbeOnSim, TransparentAndCompleteForEveryOp) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  RINGSIDE_REQUIRE_FILE(Paths::simrun());
  const std::string dir = make_temp_dir("ops");
  const Exit plain = run(simrun(8, {Paths::app(), "ops"}), {Paths::sim_env()});
  const Exit probed = run(simrun(8, {Paths::app(), "ops"}), probe_env(dir));
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(probed.status, plain.status) << probed.err;
  EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out)) << "results or return codes changed";
  EXPECT_NE(plain.out.find("bad_dtype rc=4"), std::string::npos)
      << "the error case must be an error";

  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 8u);
  std::set<int64_t> ranks;
  for (const auto& t : traces) {
    ranks.insert(t.meta.rank);
    EXPECT_EQ(t.meta.world_size, 8);
    EXPECT_EQ(t.meta.rank_source, "torchrun");
    EXPECT_EQ(t.meta.producer, "probe");
    EXPECT_EQ(t.comms.size(), 2u) << "world and the split";
    // 13 successful world collectives + 2 error calls on it + 1 on a NULL comm,
    // 2 send/recv, 1 split all-reduce.
    size_t errors = 0;
    std::map<OpKind, int> kinds;
    for (const auto& o : t.ops) {
      kinds[static_cast<OpKind>(o.op)]++;
      if (o.flags & trace::kFlagNcclError) ++errors;
    }
    EXPECT_EQ(errors, 3u) << t.path;
    EXPECT_EQ(kinds[OpKind::kSend], 2) << "the ring send and the bad-peer send";
    EXPECT_EQ(kinds[OpKind::kRecv], 1);
    EXPECT_EQ(kinds[OpKind::kBroadcast], 2) << "ncclBroadcast and ncclBcast";
    for (OpKind k : {OpKind::kReduce, OpKind::kAllGather, OpKind::kReduceScatter, OpKind::kAllToAll,
                     OpKind::kGather, OpKind::kScatter}) {
      EXPECT_EQ(kinds[k], 1) << trace::op_kind_name(k);
    }
    for (const auto& o : t.ops) {
      if (static_cast<OpKind>(o.op) == OpKind::kAllGather) {
        EXPECT_EQ(o.count, 1003u);
        EXPECT_EQ(o.bytes, 1003u * 4 * 8) << "nccl-tests size: the gathered buffer";
      }
      if (static_cast<OpKind>(o.op) == OpKind::kRecv) {
        EXPECT_EQ(o.peer, (t.meta.rank + 7) % 8);
        EXPECT_TRUE(o.flags & trace::kFlagInGroup);
        EXPECT_NE(o.group_id, 0u);
      }
    }
  }
  EXPECT_EQ(ranks.size(), 8u);
  expect_aligned(traces);
  expect_device_timed(traces);
  std::filesystem::remove_all(dir);
}

TEST(ProbeOnSim, ExampleUnchangedAndEveryOpTraced) {
  RINGSIDE_REQUIRE_FILE(Paths::train());
  const std::string dir = make_temp_dir("train");
  const std::vector<std::string> program{Paths::train(), "--steps", "4", "--buckets", "5",
                                         "--log-every",  "0"};
  const auto traces = traced_run(8, program, dir, false);  // timings differ
  ASSERT_EQ(traces.size(), 8u);
  for (const auto& t : traces) {
    EXPECT_FALSE(t.ops.empty());
    ASSERT_FALSE(t.stats.empty());
    EXPECT_EQ(t.stats.back().ops_dropped, 0u);
    EXPECT_EQ(t.stats.back().ops_recorded, t.ops.size());
    if (std::filesystem::exists("/proc/thread-self/schedstat")) {
      // What the probe's own threads cost: some CPU, far less than a core's worth.
      EXPECT_GT(t.stats.back().probe_cpu_ns, 0) << t.path;
      EXPECT_LT(t.stats.back().probe_cpu_ns, t.stats.back().t_ns / 2) << t.path;
    }
    size_t gradient_reductions = 0;
    for (const auto& o : t.ops) {
      if (static_cast<OpKind>(o.op) == OpKind::kAllReduce && o.bytes == (1u << 20))
        ++gradient_reductions;
    }
    EXPECT_EQ(gradient_reductions, 4u * 5u) << t.path << ": 4 steps x 5 buckets of 1 MiB";
  }
  expect_aligned(traces);
  expect_device_timed(traces);
  std::filesystem::remove_all(dir);
}

TEST(ProbeOnSim, ExampleWithTensorAndPipelineGroups) {
  RINGSIDE_REQUIRE_FILE(Paths::train());
  const std::string dir = make_temp_dir("train3d");
  const std::vector<std::string> program{
      Paths::train(), "--steps", "3",           "--tp", "2", "--pp", "2",
      "--compute-ms", "5",       "--log-every", "0"};
  const auto traces = traced_run(8, program, dir, false);  // timings differ
  ASSERT_EQ(traces.size(), 8u);
  for (const auto& t : traces) {
    EXPECT_GE(t.comms.size(), 3u) << "world plus split groups";
    size_t p2p = 0;
    for (const auto& o : t.ops) p2p += trace::is_p2p(static_cast<OpKind>(o.op)) ? 1 : 0;
    EXPECT_GT(p2p, 0u) << "pipeline send/recv";
    for (const auto& c : t.comms) {
      if (c.origin == static_cast<uint8_t>(trace::CommOrigin::kSplit)) {
        EXPECT_NE(c.parent_id, 0u);
      }
    }
  }
  expect_aligned(traces);
  expect_device_timed(traces);
  std::filesystem::remove_all(dir);
}

// Every other way to make a communicator: non-blocking split, shrink,
// InitRankScalable, two members per process of one communicator from one unique id
// (in one group, on two devices), and InitAll (two members in one process, one group).
TEST(ProbeOnSim, EveryKindOfCommunicatorIsTraced) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("inits");
  const auto traces = traced_run(2, {Paths::app(), "inits"}, dir, true);
  ASSERT_EQ(traces.size(), 2u);
  std::set<uint64_t> two_per_process;  // its id, on either process
  for (const auto& t : traces) {
    const bool shrinks = t.meta.rank == 0;  // the last rank is excluded from the shrink
    std::map<trace::CommOrigin, int> origins;
    std::map<trace::CommOrigin, uint64_t> id_of;
    std::vector<trace::CommRecord> of_four;  // the world has 2 ranks; the pair's has 4
    for (const auto& c : t.comms) {
      const auto o = static_cast<trace::CommOrigin>(c.origin);
      ++origins[o];
      if (o == trace::CommOrigin::kInitRank && c.nranks == 4) {
        of_four.push_back(c);
        continue;
      }
      id_of[o] = c.comm_id;
    }
    EXPECT_EQ(origins[trace::CommOrigin::kInitRank], 3) << t.path;
    ASSERT_EQ(of_four.size(), 2u) << t.path;
    EXPECT_EQ(of_four[0].comm_id, of_four[1].comm_id) << t.path << ": one communicator";
    EXPECT_NE(of_four[0].rank, of_four[1].rank) << t.path;
    two_per_process.insert(of_four[0].comm_id);
    EXPECT_EQ(t.ops_by_comm().at(of_four[0].comm_id).size(), 2u)
        << t.path << ": one all-reduce per member";
    EXPECT_EQ(origins[trace::CommOrigin::kSplit], 1) << t.path << ": the non-blocking split";
    EXPECT_EQ(origins[trace::CommOrigin::kShrink], shrinks ? 1 : 0) << t.path;
    EXPECT_EQ(origins[trace::CommOrigin::kInitScalable], 1) << t.path;
    EXPECT_EQ(origins[trace::CommOrigin::kInitAll], 2) << t.path << ": one record per member";
    const auto by_comm = t.ops_by_comm();
    auto ops_on = [&](trace::CommOrigin o) {
      auto it = by_comm.find(id_of[o]);
      return it == by_comm.end() ? size_t{0} : it->second.size();
    };
    EXPECT_EQ(ops_on(trace::CommOrigin::kSplit), 1u) << t.path;
    EXPECT_EQ(ops_on(trace::CommOrigin::kShrink), shrinks ? 1u : 0u) << t.path;
    EXPECT_EQ(ops_on(trace::CommOrigin::kInitScalable), 1u) << t.path;
    const size_t members = ops_on(trace::CommOrigin::kInitAll);
    EXPECT_EQ(members, 2u) << t.path << ": one all-reduce per member, in one group";
    if (members == 2u) {
      const auto& pair = by_comm.at(id_of[trace::CommOrigin::kInitAll]);
      EXPECT_NE(pair[0].group_id, 0u);
      EXPECT_EQ(pair[0].group_id, pair[1].group_id);
    }
    EXPECT_EQ(t.ops.size(), shrinks ? 7u : 6u) << t.path;
  }
  EXPECT_EQ(two_per_process.size(), 1u) << "the same id on every process";
  expect_device_timed(traces);
  std::filesystem::remove_all(dir);
}

// nccl_bench checks every element of every collective (and every type and
// reduction) under the probe: the probe changes no result, and records every op.
TEST(ProbeOnSim, EveryCollectiveTypeAndOpStaysCorrectUnderTheProbe) {
  RINGSIDE_REQUIRE_FILE(Paths::nccl_bench());
  const std::vector<std::vector<std::string>> runs = {
      {"all_reduce", "-d", "all", "-o", "all", "-b", "256", "-e", "4K", "-f", "16"},
      {"all_gather"},
      {"reduce_scatter", "-o", "all"},
      {"broadcast", "-r", "2"},
      {"reduce", "-r", "3"},
      {"alltoall"},
      {"gather", "-r", "1"},
      {"scatter", "-r", "1"},
      {"sendrecv"}};
  for (const auto& args : runs) {
    const std::string dir = make_temp_dir("bench");
    std::vector<std::string> program{Paths::nccl_bench()};
    program.insert(program.end(), args.begin(), args.end());
    if (args.size() < 5) {
      for (const char* a : {"-b", "1K", "-e", "64K", "-f", "8"}) program.push_back(a);
    }
    for (const char* a : {"-n", "2", "-w", "1", "-c", "1"}) program.push_back(a);
    const Exit e = run(simrun(4, program), probe_env(dir));
    ASSERT_EQ(e.status, 0) << args[0] << "\n" << e.out << e.err;
    EXPECT_NE(e.out.find("# Out of bounds values : 0 OK"), std::string::npos) << e.out;
    const auto traces = load_traces(dir);
    ASSERT_EQ(traces.size(), 4u) << args[0];
    for (const auto& t : traces) {
      ASSERT_FALSE(t.stats.empty()) << t.path;
      EXPECT_EQ(t.stats.back().ops_recorded, t.ops.size()) << t.path;
      EXPECT_EQ(t.stats.back().ops_dropped, 0u) << t.path;
      EXPECT_EQ(t.stats.back().probe_errors, 0u) << t.path;
      EXPECT_EQ(t.ops.size(), traces.front().ops.size()) << args[0] << ": same ops on every rank";
      EXPECT_GT(t.ops.size(), 10u) << args[0];
    }
    std::filesystem::remove_all(dir);
  }
}

// All-reduces captured into a CUDA graph (global capture mode) while an earlier
// all-reduce is still running, so the probe's completion thread polls its events
// during the capture: the capture must succeed and the graph give the same result
// as without the probe.  The captured calls are recorded, flagged, without device
// times (the graph's launches run them later, out of the probe's sight).
TEST(ProbeOnSim, GraphCaptureIsNeverBroken) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("graph");
  const auto traces = traced_run(2, {Paths::app(), "graph", "3", "2"}, dir, true);
  ASSERT_EQ(traces.size(), 2u);
  for (const auto& t : traces) {
    ASSERT_EQ(t.ops.size(), 4u) << t.path << ": the early all-reduce and 3 captured ones";
    size_t captured = 0;
    for (const auto& o : t.ops) {
      EXPECT_EQ(o.status, static_cast<uint8_t>(trace::OpStatus::kComplete)) << t.path;
      if (o.flags & trace::kFlagGraphCapture) {
        ++captured;
        EXPECT_FALSE(o.flags & trace::kFlagDeviceTimed) << t.path;
        EXPECT_EQ(o.t_dev_start_ns, trace::kUnknownTime) << t.path;
      } else {
        EXPECT_TRUE(o.flags & trace::kFlagDeviceTimed) << t.path << ": the early all-reduce";
      }
    }
    EXPECT_EQ(captured, 3u) << t.path;
  }
  std::filesystem::remove_all(dir);
}

TEST(ProbeOnSim, ConcurrentThreadsOnTheirOwnCommunicators) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("threads");
  const auto traces = traced_run(2, {Paths::app(), "threads", "4", "25"}, dir, true);
  ASSERT_EQ(traces.size(), 2u);
  for (const auto& t : traces) {
    const auto by_comm = t.ops_by_comm();
    ASSERT_EQ(by_comm.size(), 4u) << "one comm per thread";
    for (const auto& [comm, ops] : by_comm) EXPECT_EQ(ops.size(), 25u);
    EXPECT_EQ(t.comms.size(), 5u);
  }
  expect_aligned(traces);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringside::probe::testing
