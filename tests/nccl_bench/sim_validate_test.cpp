// `nccl_bench validate` on a 4-node sim cluster (2 GPUs per node): with one
// slow-NIC node and one thermally throttled, slowed GPU exactly those two nodes
// fail, with the right reasons; a healthy cluster passes.  The sim's bandwidths
// are set low in the cluster files so that modeled transfer time, not CPU
// contention on the test machine, dominates; the fleet threshold is widened to
// 30% for the same reason (the injected faults are 4-6x).  Copies and pairs are
// measured in 8 or 16 passes of -n ops each: -n 2 or 3 keeps a run to seconds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "process_util.h"

namespace ringside::bench::testing {
namespace {

class SimValidate : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(sim_available(&why)) << why;
    dir_ = temp_dir("validate");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunResult validate(const std::string& cluster, const std::string& args, int ranks = 8,
                     int nodes = 4) {
    return run_shell(sim_command(
        ranks, nodes,
        "validate --sizes 1M -n 2 --fleet-threshold 30 --json " + dir_ + "/v.json " + args,
        std::string(TEST_DATA_DIR) + "/" + cluster));
  }
  nlohmann::json json() { return nlohmann::json::parse(read_file(dir_ + "/v.json")); }

  static const nlohmann::json& node(const nlohmann::json& j, const std::string& name) {
    for (const auto& n : j["nodes"]) {
      if (n["node"] == name) return n;
    }
    throw std::runtime_error("node " + name + " missing");
  }
  static bool any_reason_has(const nlohmann::json& n, const std::string& text) {
    for (const auto& r : n["reasons"]) {
      if (r.get<std::string>().find(text) != std::string::npos) return true;
    }
    return false;
  }

  std::string dir_;
};

void expect_faulty_verdict(const RunResult& r, const nlohmann::json& j) {
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(j["verdict"], "fail");
  ASSERT_EQ(j["nodes"].size(), 4u);
  for (const auto& n : j["nodes"]) {
    const std::string name = n["node"];
    const bool should_fail = name == "node2" || name == "node3";
    EXPECT_EQ(n["status"], should_fail ? "FAIL" : "PASS") << name << ": " << n.dump() << "\n"
                                                          << r.out;
  }
  for (const auto& l : j["links"]) EXPECT_NE(l["status"], "FAIL") << l.dump() << "\n" << r.out;
  EXPECT_EQ(j["drain_commands"].size(), 2u) << r.out;
  EXPECT_NE(r.out.find("scontrol update nodename=node2 state=drain reason=\"ringside validate: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("scontrol update nodename=node3 state=drain reason=\""), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("nodename=node1"), std::string::npos);
  EXPECT_EQ(r.out.find("nodename=node4"), std::string::npos);
}

TEST_F(SimValidate, SlowNicNodeAndThrottledGpuFailQuick) {
  const RunResult r = validate("faulty_4x2.json", "--level quick");
  const auto j = json();
  expect_faulty_verdict(r, j);
  // node2: the throttled GPU, named by NVML; node3: its NIC, from the pair tests.
  EXPECT_TRUE(SimValidate::any_reason_has(node(j, "node2"), "sw_thermal_slowdown")) << r.out;
  EXPECT_TRUE(SimValidate::any_reason_has(node(j, "node2"), "GPU 1")) << r.out;
  EXPECT_TRUE(SimValidate::any_reason_has(node(j, "node3"), "inter-node: 2 of 2 node pairs slow"))
      << r.out;
  EXPECT_FALSE(SimValidate::any_reason_has(node(j, "node3"), "thermal")) << r.out;
  EXPECT_EQ(j["rounds"], 2);
}

TEST_F(SimValidate, SlowNicNodeAndThrottledGpuFailFull) {
  const RunResult r = validate("faulty_4x2.json", "--level full");
  const auto j = json();
  expect_faulty_verdict(r, j);
  EXPECT_TRUE(SimValidate::any_reason_has(node(j, "node3"), "inter-node: 3 of 3 node pairs slow"))
      << r.out;
  EXPECT_EQ(j["links"].size(), 6u);  // every pair of 4 nodes
  EXPECT_EQ(j["rounds"], 3);
  ASSERT_EQ(j["global_all_reduce_busbw"].size(), 1u);
  EXPECT_GT(j["global_all_reduce_busbw"][0].get<double>(), 0.0);
}

TEST_F(SimValidate, HealthyClusterPasses) {
  const RunResult r = validate("healthy_4x2.json", "--level full");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = json();
  EXPECT_EQ(j["verdict"], "pass");
  for (const auto& n : j["nodes"]) EXPECT_EQ(n["status"], "PASS") << n.dump();
  for (const auto& l : j["links"]) EXPECT_EQ(l["status"], "PASS") << l.dump();
  EXPECT_EQ(r.out.find("scontrol"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# verdict: PASS"), std::string::npos) << r.out;
}

// One node, no baseline: nothing to compare its all_reduce with, but its GPUs
// compare with each other.  A 4x slower GPU (no NVML sign of it) fails the node,
// naming that GPU; what had nothing to compare with is said, never passed silently.
TEST_F(SimValidate, OneNodeWithoutBaselineFailsASlowGpuByComparingItsGpus) {
  const RunResult r = run_shell(
      sim_command(4, 1, "validate --sizes 1M -n 2 --fleet-threshold 30 --json " + dir_ + "/v.json",
                  std::string(TEST_DATA_DIR) + "/slow_gpu_1x4.json"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = json();
  const auto& n = node(j, "node1");
  EXPECT_EQ(n["status"], "FAIL") << r.out;
  // Its copy (against the other GPUs and the floor) and its GPU pairs name GPU 1, only.
  ASSERT_GE(n["reasons"].size(), 1u) << r.out;
  EXPECT_NE(n["reasons"][0].get<std::string>().find("GPU 1 device copy 64M"), std::string::npos)
      << r.out;
  for (const auto& why : n["reasons"])
    EXPECT_EQ(why.get<std::string>().rfind("GPU 1", 0), 0u) << r.out;
  ASSERT_EQ(n["device_copy_gbps"].size(), 4u);
  EXPECT_NE(r.out.find("intra-node all_reduce: no other node"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scontrol update nodename=node1"), std::string::npos) << r.out;
}

// One node, no peers: of its six GPU pairs, the one whose link is 4x slower fails
// the node, named as the link between its two GPUs.
TEST_F(SimValidate, ASlowIntraNodeGpuPairIsNamed) {
  const RunResult r =
      run_shell(sim_command(4, 1, "validate --sizes 1M -n 3 --json " + dir_ + "/v.json",
                            std::string(TEST_DATA_DIR) + "/slow_pair_1x4.json"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = json();
  const auto& n = node(j, "node1");
  EXPECT_EQ(n["status"], "FAIL") << r.out;
  ASSERT_EQ(n["reasons"].size(), 1u) << r.out;
  EXPECT_EQ(n["reasons"][0].get<std::string>().rfind("GPU 1<->GPU 2 sendrecv 1M: best ", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("scontrol update nodename=node1"), std::string::npos) << r.out;
}

// A --baseline entry overrides the built-in floor table: a floor no healthy pair
// reaches fails a lone pair of GPUs, which has no other pair to compare with.
TEST_F(SimValidate, ABaselineEntryOverridesTheFloorTable) {
  const std::string baseline = dir_ + "/floors.json";
  std::ofstream(baseline)
      << R"({"schema": "ringside.baseline/1", "models": {"ringside-sim H100-SXM5-80GB":
      {"intra_node_pair_sendrecv": {"1M": 1000}}}})";
  const std::string args = "validate --sizes 1M -n 3 --json " + dir_ + "/v.json";
  const std::string cluster = std::string(TEST_DATA_DIR) + "/healthy_1x4.json";
  RunResult r = run_shell(sim_command(2, 1, args + " --baseline " + baseline, cluster));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = json();
  EXPECT_EQ(j["floors"], "built-in floor table + " + baseline);
  EXPECT_TRUE(any_reason_has(node(j, "node1"), "GPU 0<->GPU 1 sendrecv 1M")) << r.out;
  EXPECT_TRUE(any_reason_has(node(j, "node1"), "below the floor 1000.00 GB/s")) << r.out;
  // Without the entry the pair is not compared, and that is said.
  r = run_shell(sim_command(2, 1, args, cluster));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("GPU pair sendrecv: 2 GPUs make fewer than 3 pairs"), std::string::npos)
      << r.out;
}

TEST_F(SimValidate, OneHealthyNodePassesAndSaysWhatWasNotCompared) {
  const RunResult r = run_shell(
      sim_command(4, 1, "validate --sizes 1M -n 3 --fleet-threshold 30 --json " + dir_ + "/v.json",
                  std::string(TEST_DATA_DIR) + "/healthy_1x4.json"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = json();
  const auto& n = node(j, "node1");
  EXPECT_EQ(n["status"], "PASS") << r.out;
  // Its GPUs and GPU pairs compare with each other and the floor table; its
  // all_reduce and NIC have nothing to compare with.
  ASSERT_EQ(n["not_compared"].size(), 2u) << r.out;
  EXPECT_NE(n["not_compared"][0].get<std::string>().find("inter-node: one node"),
            std::string::npos);
  EXPECT_NE(n["not_compared"][1].get<std::string>().find("intra-node all_reduce"),
            std::string::npos);
  EXPECT_EQ(n["gpu_pairs"].size(), 6u) << r.out;
  EXPECT_EQ(r.out.find("scontrol"), std::string::npos) << r.out;
}

// An XID reported by NVML while the node is tested fails that node alone, whatever its
// bandwidth.
TEST_F(SimValidate, XidDuringTheTestFailsTheNode) {
  const RunResult r = validate("xid_4x2.json", "--level quick");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = json();
  EXPECT_EQ(j["verdict"], "fail");
  for (const auto& n : j["nodes"]) {
    const bool faulty = n["node"] == "node4";
    EXPECT_EQ(n["status"], faulty ? "FAIL" : "PASS") << n.dump() << "\n" << r.out;
    if (faulty) {
      EXPECT_TRUE(any_reason_has(n, "XID 79")) << n.dump();
    }
  }
  EXPECT_NE(r.out.find("scontrol update nodename=node4"), std::string::npos) << r.out;
}

TEST_F(SimValidate, BaselineFloorFailsEveryNodeBelowIt) {
  const std::string baseline = dir_ + "/baseline.json";
  std::ofstream(baseline)
      << R"({"schema": "ringside.baseline/1", "models": {"ringside-sim H100-SXM5-80GB":
      {"intra_node_all_reduce": {"1M": 1000}, "inter_node_sendrecv": {"1M": 0.001}}}})";
  const RunResult r = validate("healthy_4x2.json", "--level quick --baseline " + baseline);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = json();
  for (const auto& n : j["nodes"]) {
    EXPECT_EQ(n["status"], "FAIL");
    EXPECT_TRUE(SimValidate::any_reason_has(n, "below the baseline 1000.00 GB/s")) << n.dump();
  }
  for (const auto& l : j["links"]) EXPECT_EQ(l["status"], "PASS") << l.dump();
}

TEST_F(SimValidate, DrainRunsScontrol) {
  // A stand-in scontrol on PATH records its arguments.
  const std::string bin = dir_ + "/bin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream s(bin + "/scontrol");
    s << "#!/bin/sh\nprintf '%s|' \"$@\" >> " << dir_ << "/drained\necho >> " << dir_
      << "/drained\n";
  }
  std::filesystem::permissions(bin + "/scontrol", std::filesystem::perms::owner_all);
  const RunResult r =
      run_shell("PATH=" + bin + ":$PATH " +
                sim_command(8, 4, "validate --sizes 1M -n 3 --fleet-threshold 30 --drain",
                            std::string(TEST_DATA_DIR) + "/xid_4x2.json"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The node with the XID, and no other (an XID fails fast: no slow part to time).
  const std::string drained = read_file(dir_ + "/drained");
  EXPECT_NE(drained.find("update|nodename=node4|state=drain|reason=ringside validate: "),
            std::string::npos)
      << drained;
  for (const char* other : {"nodename=node1|", "nodename=node2|", "nodename=node3|"})
    EXPECT_EQ(drained.find(other), std::string::npos) << drained;
}

TEST_F(SimValidate, BadArgumentsExitWithTwo) {
  const std::string bad_table = dir_ + "/bad.json";
  std::ofstream(bad_table)
      << R"({"schema": "ringside.baseline/1", "models": {"m": {"device_copy": {"64M": 0}}}})";
  const RunResult bad = run_shell(sim_command(2, 1, "validate --baseline " + bad_table));
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("models.m.device_copy.64M: must be a positive number of GB/s"),
            std::string::npos)
      << bad.err;
  for (const char* args : {"--level slow", "--baseline /nonexistent.json", "--fleet-threshold x",
                           "--sizes 1Q", "--bogus"}) {
    const RunResult r = run_shell(sim_command(2, 1, std::string("validate ") + args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("nccl_bench"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ringside::bench::testing
