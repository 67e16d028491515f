// Tests of the sim's libnccl.so.2 with real processes: results against a reference,
// init paths, groups, splits, and the cluster model's pacing and faults.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "process_group.h"

using ringside::test::describe;
using ringside::test::LaunchSpec;
using ringside::test::RankResult;
using ringside::test::run_ranks;

namespace {

LaunchSpec worker(int nranks, std::vector<std::string> args, double timeout_s = 90) {
  LaunchSpec spec;
  spec.argv = {RINGSIM_TEST_WORKER};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.nranks = nranks;
  spec.timeout_s = timeout_s;
  return spec;
}

void expect_all_pass(const std::vector<RankResult>& results, const std::string& marker) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].finished && results[r].exited && results[r].exit_code == 0)
        << describe(results);
    EXPECT_NE(results[r].out.find(marker), std::string::npos) << describe(results);
  }
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = "/tmp/ringsim_test_" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

class Collectives : public ::testing::TestWithParam<int> {};

// Every collective, datatype and op against the reference, in and out of place.
TEST_P(Collectives, MatchReference) {
  auto results = run_ranks(worker(GetParam(), {"colls"}));
  expect_all_pass(results, "colls ok");
}
INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(2, 3, 4, 8));

TEST(SimNccl, GroupedSendRecvNeverDeadlocks) {
  for (int n : {3, 4}) expect_all_pass(run_ranks(worker(n, {"group"})), "group ok");
}

TEST(SimNccl, SplitCommunicators) {
  expect_all_pass(run_ranks(worker(5, {"split"})), "split ok");
}

TEST(SimNccl, ShrinkWithoutOneRank) {
  expect_all_pass(run_ranks(worker(4, {"shrink"})), "shrink ok");
}

TEST(SimNccl, InitByUniqueIdWithoutCommId) {
  // Rank 0's ncclGetUniqueId starts the root; the id travels through a file.
  auto spec = worker(3, {"split"});
  spec.comm_id = false;
  std::string id_file = "/tmp/ringsim_test_id_" + std::to_string(getpid());
  std::remove(id_file.c_str());
  spec.env["RINGSIM_TEST_ID_FILE"] = id_file;
  expect_all_pass(run_ranks(spec), "split ok");
  std::remove(id_file.c_str());
}

TEST(SimNccl, NonBlockingInit) {
  expect_all_pass(run_ranks(worker(3, {"nonblocking"})), "nonblocking ok");
}

TEST(SimNccl, SeveralDevicesInOneProcess) {
  auto spec = worker(1, {"initall", "4"});
  spec.comm_id = false;
  expect_all_pass(run_ranks(spec), "initall ok");
}

namespace {

// Mean all-reduce and send/recv times of rank 0 with two ranks on two nodes.
std::pair<double, double> two_node_times(const std::string& cluster_json) {
  auto spec = worker(2, {"timing", std::to_string(2 << 20)});
  spec.env["RINGSIM_CLUSTER"] = write_temp("cluster.json", cluster_json);
  spec.rank_env = {{{"RINGSIM_NODE", "node1"}}, {{"RINGSIM_NODE", "node2"}}};
  auto results = run_ranks(spec);
  std::remove(spec.env["RINGSIM_CLUSTER"].c_str());
  std::smatch m;
  std::regex re("allreduce_us ([0-9.]+) sendrecv_us ([0-9.]+)");
  EXPECT_TRUE(std::regex_search(results[0].out, m, re)) << describe(results);
  if (m.size() < 3) return {0, 0};
  return {std::stod(m[1]), std::stod(m[2])};
}

// A slow inter-node link (0.25 GB/s) so the model, not the CPUs, sets the baseline.
const char* kTwoNodes = R"({"nodes": 2, "inter_node": {"bandwidth_gbps": 0.25, "latency_us": 10})";

}  // namespace

TEST(SimNcclFaults, TenTimesSlowerLinkShowsInTransfers) {
  auto [ar_fast, p2p_fast] = two_node_times(std::string(kTwoNodes) + "}");
  auto [ar_slow, p2p_slow] =
      two_node_times(std::string(kTwoNodes) +
                     R"(, "faults": {"slow_pair": {"nodes": ["node1", "node2"], "factor": 10}}})");
  EXPECT_GE(ar_slow, 3 * ar_fast) << "all-reduce " << ar_fast << " us vs " << ar_slow << " us";
  EXPECT_GE(p2p_slow, 3 * p2p_fast) << "send/recv " << p2p_fast << " us vs " << p2p_slow << " us";
  auto [ar_nic, p2p_nic] = two_node_times(
      std::string(kTwoNodes) + R"(, "faults": {"slow_nic": {"node": "node2", "factor": 10}}})");
  EXPECT_GE(ar_nic, 3 * ar_fast) << "all-reduce " << ar_fast << " us vs " << ar_nic
                                 << " us (slow NIC)";
}

namespace {

std::vector<RankResult> run_fault(const std::string& faults, bool desync = false) {
  auto spec = worker(3,
                     desync ? std::vector<std::string>{"loop", "8", "desync"}
                            : std::vector<std::string>{"loop", "8"},
                     6);
  spec.env["RINGSIM_CLUSTER"] = write_temp("fault.json", R"({"faults": )" + faults + "}");
  if (desync) spec.env["RINGSIM_DEBUG"] = "1";
  auto results = run_ranks(spec);
  std::remove(spec.env["RINGSIM_CLUSTER"].c_str());
  return results;
}

}  // namespace

TEST(SimNcclFaults, StoppedRankMakesPeersBlock) {
  auto results = run_fault(R"({"stop": {"rank": 1, "op": 3}})");
  // Rank 1 enqueued op 2 and never returned; the others finished op 2 and wait in op 3.
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(results[r].finished) << describe(results);
    EXPECT_FALSE(contains(results[r].out, "completed op 3")) << describe(results);
  }
  EXPECT_FALSE(contains(results[1].out, "issued op 2")) << describe(results);
  EXPECT_TRUE(contains(results[0].out, "completed op 2")) << describe(results);
  EXPECT_TRUE(contains(results[2].out, "completed op 2")) << describe(results);
}

TEST(SimNcclFaults, StalledDeviceBlocksTheOp) {
  auto results = run_fault(R"({"stall": {"rank": 1, "op": 3}})");
  EXPECT_TRUE(contains(results[1].out, "issued op 3")) << describe(results);  // the host went on
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(results[r].finished) << describe(results);
    EXPECT_TRUE(contains(results[r].out, "completed op 2")) << describe(results);
    EXPECT_FALSE(contains(results[r].out, "completed op 3")) << describe(results);
  }
}

TEST(SimNcclFaults, CrashedRankMakesPeersBlockOrSeeRemoteError) {
  auto results = run_fault(R"({"crash": {"rank": 1, "op": 3}})");
  EXPECT_TRUE(results[1].finished && !results[1].exited && results[1].signal == SIGABRT)
      << describe(results);
  for (int r : {0, 2}) {
    EXPECT_FALSE(contains(results[r].out, "completed op 3")) << describe(results);
    bool blocked = !results[r].finished;
    bool saw_error = results[r].finished && results[r].exited && results[r].exit_code == 3 &&
                     contains(results[r].out, "remote process exited");
    EXPECT_TRUE(blocked || saw_error) << describe(results);
  }
}

TEST(SimNcclFaults, DesyncBlocksAndSaysSoInDebugMode) {
  auto results = run_fault("{}", /*desync=*/true);
  bool said = false;
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(results[r].finished) << describe(results);
    EXPECT_FALSE(contains(results[r].out, "completed op 3")) << describe(results);
    said = said || contains(results[r].err, "desync");
  }
  EXPECT_TRUE(said) << describe(results);
}

// The library's exports, loaded directly (no CUDA needed for these calls).
TEST(SimNcclLibrary, ExportsWeakAndStrongNamesAndFailsLoudlyWhereUnsupported) {
  std::string path = std::string(RINGSIM_TEST_LIB_DIR) + "/libnccl.so.2";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (const char* name : {"AllReduce",
                           "Broadcast",
                           "Bcast",
                           "Reduce",
                           "AllGather",
                           "ReduceScatter",
                           "AlltoAll",
                           "Gather",
                           "Scatter",
                           "Send",
                           "Recv",
                           "GroupStart",
                           "GroupEnd",
                           "CommInitRank",
                           "CommInitRankConfig",
                           "CommInitAll",
                           "CommSplit",
                           "CommShrink",
                           "CommFinalize",
                           "CommDestroy",
                           "CommAbort",
                           "CommRevoke",
                           "CommGetAsyncError",
                           "GetVersion",
                           "GetUniqueId",
                           "GetErrorString",
                           "GetLastError",
                           "MemAlloc",
                           "CommWindowRegister"}) {
    void* weak = dlsym(lib, (std::string("nccl") + name).c_str());
    void* strong = dlsym(lib, (std::string("pnccl") + name).c_str());
    EXPECT_NE(weak, nullptr) << name;
    EXPECT_EQ(weak, strong) << name;
  }
  auto get_version = reinterpret_cast<ncclResult_t (*)(int*)>(dlsym(lib, "ncclGetVersion"));
  int version = 0;
  EXPECT_EQ(get_version(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  auto simulate =
      reinterpret_cast<ncclResult_t (*)(ncclSimInfo_t*)>(dlsym(lib, "ncclGroupSimulateEnd"));
  auto last_error = reinterpret_cast<const char* (*)(ncclComm_t)>(dlsym(lib, "ncclGetLastError"));
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(simulate(&info), ncclInvalidUsage);
  EXPECT_NE(std::string(last_error(nullptr)).find("not supported"), std::string::npos);
  auto window = reinterpret_cast<ncclResult_t (*)(ncclComm_t, void*, size_t, ncclWindow_t*, int)>(
      dlsym(lib, "ncclCommWindowRegister"));
  EXPECT_EQ(window(nullptr, nullptr, 0, nullptr, 0), ncclInvalidUsage);
  dlclose(lib);
}

namespace {

// Four ranks, two per node, an all-reduce ring 0->1->2->3->0 and intra-node
// send/recv pairs (0,1), (2,3); every profiler call of each rank.
std::vector<RankResult> profiled_run(const std::string& plugin) {
  auto spec = worker(4, {"timing", std::to_string(2 << 20)}, 60);
  spec.env["RINGSIM_CLUSTER"] =
      write_temp("prof.json", R"({"gpus_per_node": 8, "nodes": ["node1", "node2"],
                      "inter_node": {"bandwidth_gbps": 0.25, "latency_us": 10}})");
  spec.env["NCCL_PROFILER_PLUGIN"] = plugin;
  spec.rank_env = {{{"RINGSIM_NODE", "node1"}},
                   {{"RINGSIM_NODE", "node1"}},
                   {{"RINGSIM_NODE", "node2"}},
                   {{"RINGSIM_NODE", "node2"}}};
  auto results = run_ranks(spec);
  std::remove(spec.env["RINGSIM_CLUSTER"].c_str());
  return results;
}

std::vector<std::string> prof_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("prof: ", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

size_t count_prefix(const std::vector<std::string>& lines, const std::string& prefix) {
  size_t n = 0;
  for (const auto& l : lines) n += l.rfind(prefix, 0) == 0;
  return n;
}

}  // namespace

TEST(SimNcclProfiler, ProxyEventsCoverExactlyTheInterNodeRingNeighbours) {
  auto results = profiled_run(RINGSIM_TEST_PROFILER);
  ASSERT_EQ(results.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const RankResult& res = results[static_cast<size_t>(r)];
    ASSERT_TRUE(res.finished && res.exited && res.exit_code == 0) << describe(results);
    const auto lines = prof_lines(res.err);
    EXPECT_EQ(count_prefix(lines, "init nranks=4 rank=" + std::to_string(r) + " nodes=2"), 1u)
        << res.err;
    EXPECT_EQ(count_prefix(lines, "finalize"), 1u) << res.err;
    // Ring 0->1->2->3->0 over node1 = {0,1}, node2 = {2,3}: only 1->2 and 3->0 cross.
    const std::string expected = r == 1   ? "start proxyop peer=2 send=1"
                                 : r == 3 ? "start proxyop peer=0 send=1"
                                 : r == 2 ? "start proxyop peer=1 send=0"
                                          : "start proxyop peer=3 send=0";
    const size_t ops = count_prefix(lines, "start proxyop");
    EXPECT_GT(ops, 0u) << res.err;
    EXPECT_EQ(count_prefix(lines, expected), ops) << "rank " << r << ":\n" << res.err;
    EXPECT_EQ(count_prefix(lines, "stop proxyop"), ops) << res.err;
    const size_t steps = count_prefix(lines, "start proxystep");
    EXPECT_GE(steps, ops);
    EXPECT_EQ(count_prefix(lines, "stop proxystep"), steps) << res.err;
    for (const auto& l : lines) {
      if (l.rfind("start proxyop", 0) == 0) {
        EXPECT_NE(l.find("pid_ok=1 parent_coll=1"), std::string::npos) << l;
      }
      if (l.rfind("start proxystep", 0) == 0) {
        EXPECT_NE(l.find("parent_op=1"), std::string::npos) << l;
      }
    }
    // A send step goes GPU wait -> peer wait -> network, with its size; a receive
    // step waits for data, then flushes and hands it to the GPU.
    if (r == 1 || r == 3) {
      EXPECT_EQ(count_prefix(lines, "state proxystep 8 "), steps);
      EXPECT_EQ(count_prefix(lines, "state proxystep 20 "), steps);
      EXPECT_EQ(count_prefix(lines, "state proxystep 9 "), steps);
      EXPECT_EQ(count_prefix(lines, "state proxystep 9 bytes=0"), 0u) << res.err;
    } else {
      EXPECT_EQ(count_prefix(lines, "state proxystep 10 "), steps);
      EXPECT_EQ(count_prefix(lines, "state proxystep 12 "), steps);
      EXPECT_EQ(count_prefix(lines, "state proxystep 12 bytes=0"), 0u) << res.err;
    }
  }
}

TEST(SimNcclProfiler, NoneOrAMissingLibraryMeansNoPluginAndTheJobRunsAsBefore) {
  for (const std::string plugin : {"none", "no-such-profiler"}) {
    auto results = profiled_run(plugin);
    for (const RankResult& res : results) {
      EXPECT_TRUE(res.finished && res.exited && res.exit_code == 0) << describe(results);
      EXPECT_TRUE(prof_lines(res.err).empty()) << plugin << ": " << res.err;
    }
  }
}
