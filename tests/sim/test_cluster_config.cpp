// The cluster model: defaults, parsing, strict errors, links and fault lookups.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "cluster.h"
#include "nvml_bits.h"
#include "sim_test_util.h"

using namespace ringside::sim;

namespace {

// Identity comes from the environment; keep tests independent of the runner's.
class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"RINGSIM_NODE", "RINGSIM_CLUSTER", "SLURMD_NODENAME", "SLURM_JOB_ID",
                          "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "RANK"})
      unsetenv(v);
  }
};

Cluster parse_ok(const std::string& text) {
  auto r = parse_cluster(text, "test.json");
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? std::move(r).value() : Cluster::defaults();
}

std::string parse_error(const std::string& text) {
  auto r = parse_cluster(text, "bad.json");
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  return r.ok() ? "" : r.message();
}

TEST_F(ClusterTest, DefaultsWithoutFileAreOneHealthyNodeOfEightGpus) {
  auto r = load_cluster_from_env();
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r->from_file());
  ASSERT_EQ(r->nodes().size(), 1u);
  EXPECT_EQ(r->my_node().name, "node1");
  EXPECT_EQ(r->my_node().gpus, 8);
  EXPECT_TRUE(r->slow_gpus().empty() && r->op_faults().empty());
  EXPECT_EQ(r->my_device_slow_factor(0), 1.0);
  EXPECT_EQ(r->nvml_state(0, 0).clock_event_reasons, 0u);
  EXPECT_EQ(r->link({"node1", 0}, {"node1", 1}).bandwidth_gbps, kDefaultIntraBandwidthGBps);
}

TEST_F(ClusterTest, RankToNodeWithoutFileUsesGpusPerNode) {
  setenv("RANK", "11", 1);
  auto r = load_cluster_from_env();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->my_node().name, "node2");
  EXPECT_EQ(r->global_rank(), 11);
  setenv("RINGSIM_NODE", "nodeX", 1);
  r = load_cluster_from_env();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->my_node().name, "nodeX");
}

TEST_F(ClusterTest, SlurmNodeNameUsedUnderSlurm) {
  setenv("SLURMD_NODENAME", "gpu-a", 1);
  auto r = load_cluster_from_env();
  EXPECT_EQ(r->my_node().name, "node1") << "SLURMD_NODENAME alone is not 'under Slurm'";
  setenv("SLURM_JOB_ID", "7", 1);
  r = load_cluster_from_env();
  EXPECT_EQ(r->my_node().name, "gpu-a");
}

TEST_F(ClusterTest, ParsesNodesLinksFaultsAndNvml) {
  setenv("RINGSIM_NODE", "b", 1);
  setenv("RANK", "9", 1);
  Cluster c = parse_ok(R"({
    "gpus_per_node": 4, "gpu_model": "A100",
    "nodes": ["a", {"name": "b", "gpus": 2}],
    "intra_node": {"bandwidth_gbps": 8, "latency_us": 1},
    "inter_node": {"bandwidth_gbps": 2, "latency_us": 20},
    "nvml": [{"node": "b", "gpu": 1, "thermal_throttle": true, "xid": {"code": 79, "at_seconds": 3},
              "ecc": {"volatile_uncorrected": 2}, "remapped_rows": {"uncorrectable": 1, "pending": true},
              "pcie_replays": 5}],
    "faults": {
      "slow_gpu": [{"node": "a", "gpu": 3, "factor": 5}, {"rank": 9, "factor": 2}],
      "slow_nic": {"node": "b", "factor": 4},
      "slow_pair": {"nodes": ["a", "b"], "factor": 2},
      "stop": {"rank": 3, "op": 10},
      "stall": {"rank": 1, "op": 4, "comm": 2},
      "crash": {"rank": 2, "op": 7, "comm": "world"},
      "freeze": [{"op": 12}, {"rank": 4, "op": 3, "comm": 1}]
    }})");
  ASSERT_EQ(c.nodes().size(), 2u);
  EXPECT_EQ(c.nodes()[0].gpus, 4);
  EXPECT_EQ(c.nodes()[1].gpus, 2);
  EXPECT_EQ(c.nodes()[0].gpu_model, "A100");
  EXPECT_EQ(c.my_node().name, "b");
  Link intra = c.link({"a", 0}, {"a", 1});
  EXPECT_EQ(intra.bandwidth_gbps, 8);
  Link inter = c.link({"a", 0}, {"b", 1});
  EXPECT_DOUBLE_EQ(inter.bandwidth_gbps, 2.0 / 4 / 2);  // slow_nic then slow_pair
  EXPECT_EQ(inter.latency_us, 20);
  EXPECT_EQ(c.slow_factor("a", 3, -1), 5);
  EXPECT_EQ(c.slow_factor("a", 2, -1), 1);
  EXPECT_EQ(c.slow_factor("b", 0, 9), 2);
  EXPECT_EQ(c.my_device_slow_factor(0), 2);  // this process is rank 9
  ASSERT_NE(c.op_fault(OpFaultKind::kStop, 3, 0), nullptr);
  EXPECT_EQ(c.op_fault(OpFaultKind::kStop, 3, 0)->op, 10);
  EXPECT_EQ(c.op_fault(OpFaultKind::kStop, 3, 1), nullptr);
  EXPECT_EQ(c.op_fault(OpFaultKind::kStall, 1, 2)->op, 4);
  EXPECT_EQ(c.op_fault(OpFaultKind::kCrash, 2, 0)->op, 7);
  ASSERT_NE(c.op_fault(OpFaultKind::kFreeze, 6, 0), nullptr) << "no rank: every rank";
  EXPECT_EQ(c.op_fault(OpFaultKind::kFreeze, 6, 0)->op, 12);
  EXPECT_EQ(c.op_fault(OpFaultKind::kFreeze, 5, 1), nullptr);
  EXPECT_EQ(c.op_fault(OpFaultKind::kFreeze, 4, 1)->op, 3);
  const GpuNvmlState& s = c.nvml_state(1, 1);
  EXPECT_NE(s.clock_event_reasons & nvmlClocksEventReasonSwThermalSlowdown, 0u);
  EXPECT_LT(s.sm_clock_mhz, s.max_sm_clock_mhz);
  EXPECT_GE(s.temperature_c, 85u);
  ASSERT_EQ(s.xids.size(), 1u);
  EXPECT_EQ(s.xids[0].code, 79u);
  EXPECT_EQ(s.ecc_volatile_uncorrected, 2u);
  EXPECT_EQ(s.ecc_aggregate_uncorrected, 2u);
  EXPECT_TRUE(s.remap_pending);
  EXPECT_EQ(s.pcie_replays, 5u);
  EXPECT_EQ(c.nvml_state(1, 0).clock_event_reasons, 0u) << "other GPUs stay healthy";
}

TEST_F(ClusterTest, SlowGpuPairSlowsOnlyThatPathInsideItsNode) {
  Cluster c = parse_ok(R"({"gpus_per_node": 4, "nodes": ["a", "b"],
    "intra_node": {"bandwidth_gbps": 8, "latency_us": 1},
    "inter_node": {"bandwidth_gbps": 2, "latency_us": 20},
    "faults": {"slow_pair": [{"node": "b", "gpus": [1, 2], "factor": 4},
                             {"nodes": ["a", "b"], "factor": 2}]}})");
  EXPECT_DOUBLE_EQ(c.link({"b", 1}, {"b", 2}).bandwidth_gbps, 2);
  EXPECT_DOUBLE_EQ(c.link({"b", 2}, {"b", 1}).bandwidth_gbps, 2);
  EXPECT_DOUBLE_EQ(c.link({"b", 0}, {"b", 1}).bandwidth_gbps, 8);
  EXPECT_DOUBLE_EQ(c.link({"a", 1}, {"a", 2}).bandwidth_gbps, 8);  // the same GPUs elsewhere
  EXPECT_DOUBLE_EQ(c.link({"a", 1}, {"b", 2}).bandwidth_gbps, 1);  // only the node pair
  EXPECT_EQ(c.link({"b", 1}, {"b", 2}).latency_us, 1);

  const std::string base = R"({"gpus_per_node": 4, "nodes": ["a", "b"], "faults": {"slow_pair": )";
  EXPECT_NE(parse_error(base + R"({"node": "b", "gpus": [1, 1], "factor": 4}}})").find("differ"),
            std::string::npos);
  EXPECT_NE(parse_error(base + R"({"node": "b", "gpus": [1, 4], "factor": 4}}})").find("gpus[1]"),
            std::string::npos);
  EXPECT_NE(parse_error(base + R"({"node": "b", "gpus": [1], "factor": 4}}})").find("two GPU"),
            std::string::npos);
  EXPECT_NE(parse_error(base + R"({"node": "c", "gpus": [0, 1], "factor": 4}}})").find("'c'"),
            std::string::npos);
  EXPECT_NE(
      parse_error(base + R"({"nodes": ["a", "b"], "node": "a", "gpus": [0, 1], "factor": 4}}})")
          .find("not both"),
      std::string::npos);
}

TEST_F(ClusterTest, NodeCountShorthandAndRankFill) {
  Cluster c = parse_ok(R"({"nodes": 3, "gpus_per_node": 2})");
  ASSERT_EQ(c.nodes().size(), 3u);
  EXPECT_EQ(c.nodes()[2].name, "node3");
  EXPECT_EQ(c.default_node_name_of_rank(3), "node2");
  EXPECT_EQ(c.default_node_name_of_rank(99), "node3");
}

TEST_F(ClusterTest, ErrorsNameTheFileAndTheKey) {
  std::string e =
      parse_error(R"({"faults": {"slow_gpu": {"node": "node1", "gpu": 0, "factr": 5}}})");
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("faults.slow_gpu.factr"), std::string::npos) << e;
  e = parse_error(
      R"({"nodes": 2, "faults": {"slow_nic": [{"node": "node2", "factor": 2}, {"node": "node9", "factor": 2}]}})");
  EXPECT_NE(e.find("faults.slow_nic[1].node"), std::string::npos) << e;
  EXPECT_NE(e.find("node9"), std::string::npos) << e;
  e = parse_error(R"({"inter_node": {"bandwidth_gbps": "fast"}})");
  EXPECT_NE(e.find("inter_node.bandwidth_gbps"), std::string::npos) << e;
  e = parse_error(R"({"faults": {"slow_gpu": {"rank": 1, "factor": 0.5}}})");
  EXPECT_NE(e.find("faults.slow_gpu.factor"), std::string::npos) << e;
  e = parse_error(R"({"nvml": {"node": "node1", "clock_event_reasons": ["too_hot"]}})");
  EXPECT_NE(e.find("too_hot"), std::string::npos) << e;
  e = parse_error(R"({"faults": {"stop": {"rank": 1, "op": 3, "comm": "mine"}}})");
  EXPECT_NE(e.find("faults.stop.comm"), std::string::npos) << e;
  e = parse_error(R"({"faults": {"stall": {"op": 3}}})");
  EXPECT_NE(e.find("faults.stall.rank"), std::string::npos)
      << "only freeze may omit the rank: " << e;
  e = parse_error(R"({"gpus_per_node": 8,})");
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  e = parse_error(R"({"speed": 1})");
  EXPECT_NE(e.find("'speed'"), std::string::npos) << e;
}

TEST_F(ClusterTest, UnknownNodeFromEnvironmentIsAnErrorWithAFile) {
  setenv("RINGSIM_NODE", "ghost", 1);
  std::string e = parse_error(R"({"nodes": 2})");
  EXPECT_NE(e.find("ghost"), std::string::npos) << e;
  EXPECT_NE(e.find("RINGSIM_NODE"), std::string::npos) << e;
}

TEST_F(ClusterTest, BadRankVariableIsAnError) {
  setenv("RANK", "3x", 1);
  auto r = load_cluster_from_env();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("RANK='3x'"), std::string::npos) << r.message();
}

TEST_F(ClusterTest, MissingFileIsAnError) {
  auto r = load_cluster_file("/nonexistent/cluster.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("/nonexistent/cluster.json"), std::string::npos);
}

// A name for mkstemp/mkdtemp in the temporary directory.
std::string temp_template() {
  return (std::filesystem::temp_directory_path() / "ringsim-cluster-XXXXXX").string();
}

// /dev/zero used to be read until memory ran out; a FIFO would block the open.
TEST_F(ClusterTest, NonRegularFilesAreRefusedWithoutReadingThem) {
  std::string dir_template = temp_template();
  ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
  const std::string dir = dir_template;
  const std::string fifo = dir + "/cluster.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, std::string> cases[] = {
      {"/dev/zero", "a character device"}, {fifo, "a FIFO"}, {dir, "a directory"}};
  for (const auto& [path, kind] : cases) {
    auto r = load_cluster_file(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_NE(r.message().find(path), std::string::npos) << r.message();
    EXPECT_NE(r.message().find(kind + ", not a regular file"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("RINGSIM_CLUSTER"), std::string::npos) << r.message();
  }
  unlink(fifo.c_str());
  rmdir(dir.c_str());
}

TEST_F(ClusterTest, OversizedFileIsRefused) {
  std::string path_template = temp_template();
  const int fd = mkstemp(path_template.data());
  ASSERT_GE(fd, 0);
  // Sparse: no disk space used.
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kMaxClusterFileBytes) + 1), 0);
  close(fd);
  auto r = load_cluster_file(path_template);
  unlink(path_template.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("at most " + std::to_string(kMaxClusterFileBytes) + " bytes"),
            std::string::npos)
      << r.message();
}

TEST_F(ClusterTest, FileAtTheSizeLimitIsRead) {
  std::string path_template = temp_template();
  const int fd = mkstemp(path_template.data());
  ASSERT_GE(fd, 0);
  std::string text = R"({"nodes": 2})";
  text.resize(kMaxClusterFileBytes, ' ');  // JSON allows trailing whitespace
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  auto r = load_cluster_file(path_template);
  unlink(path_template.c_str());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->nodes().size(), 2u);
}

}  // namespace
