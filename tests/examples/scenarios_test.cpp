// examples/scenarios: every cluster file is valid for the sim, is documented in
// the folder's README, and gives the run it promises (a healthy or degraded
// run finishes verified; a stopped, stalled or crashed rank does not).

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster.h"
#include "process_runner.h"

namespace {

namespace fs = std::filesystem;
using ringside::testing::ProcessResult;
using ringside::testing::run;

const std::string kSimrun = RINGSIDE_TEST_SIMRUN;
const std::string kTrain = RINGSIDE_TEST_TRAIN_EXAMPLE;
const std::string kSimLib = RINGSIDE_TEST_SIM_LIB_DIR;
const std::string kScenarios = RINGSIDE_TEST_SCENARIO_DIR;

std::vector<std::string> scenario_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kScenarios)) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Scenarios, EveryClusterFileLoads) {
  const auto files = scenario_files();
  ASSERT_GE(files.size(), 8u);
  for (const auto& name : files) {
    const auto cluster = ringside::sim::load_cluster_file(kScenarios + "/" + name);
    EXPECT_TRUE(cluster.ok()) << name << ": " << cluster.message();
  }
}

TEST(Scenarios, ReadmeDocumentsEveryFile) {
  std::ifstream in(kScenarios + "/README.md");
  ASSERT_TRUE(in) << "examples/scenarios/README.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& name : scenario_files()) {
    EXPECT_NE(ss.str().find(name), std::string::npos) << name << " is not in the README";
  }
}

TEST(Scenarios, FaultsAreWhereTheReadmeSaysTheyAre) {
  const auto straggler = ringside::sim::load_cluster_file(kScenarios + "/straggler_gpu.json");
  ASSERT_TRUE(straggler.ok()) << straggler.message();
  // node2 GPU 1 is rank 5 with simrun -n 8 --nodes 2.
  EXPECT_NEAR(straggler->slow_factor("node2", 1, 5), 1.2, 1e-9);
  EXPECT_NEAR(straggler->slow_factor("node1", 1, 1), 1.0, 1e-9);

  const auto slow_pair = ringside::sim::load_cluster_file(kScenarios + "/slow_pair.json");
  ASSERT_TRUE(slow_pair.ok()) << slow_pair.message();
  EXPECT_GE(slow_pair->nodes().size(), 3u);
  const double healthy = slow_pair->link({"node1", 0}, {"node2", 0}).bandwidth_gbps;
  const double slow = slow_pair->link({"node2", 0}, {"node3", 0}).bandwidth_gbps;
  EXPECT_GT(healthy, 3 * slow);

  const auto throttled = ringside::sim::load_cluster_file(kScenarios + "/throttled_gpu.json");
  ASSERT_TRUE(throttled.ok()) << throttled.message();
  const int node1 = throttled->node_index("node1");
  ASSERT_GE(node1, 0);
  EXPECT_NE(throttled->nvml_state(node1, 2).clock_event_reasons, 0u);
  EXPECT_EQ(throttled->nvml_state(node1, 1).clock_event_reasons, 0u);
  EXPECT_GT(throttled->slow_factor("node1", 2, 2), 1.0);
}

class ScenarioRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kSimLib + "/libnccl.so.2")) << "build the sim libraries first";
  }
  ProcessResult run_scenario(const std::string& file, int nodes, double timeout_s = 0) {
    std::vector<std::string> argv = {
        kSimrun, "-n", "8", "--nodes", std::to_string(nodes), "--cluster", kScenarios + "/" + file};
    if (timeout_s > 0) {
      argv.insert(argv.end(), {"--timeout", std::to_string(timeout_s), "--kill-after", "2"});
    }
    argv.insert(argv.end(), {"--", kTrain, "--steps", "8", "--compute-ms", "2", "--bucket-mb",
                             "0.25", "--check-every", "4"});
    return run(argv, {"LD_LIBRARY_PATH=" + kSimLib}, 240);
  }
};

TEST_F(ScenarioRun, DegradedClustersStillTrainCorrectly) {
  for (const auto& [file, nodes] :
       std::vector<std::pair<std::string, int>>{{"healthy.json", 2},
                                                {"straggler_gpu.json", 2},
                                                {"throttled_gpu.json", 2},
                                                {"slow_nic.json", 4},
                                                {"slow_pair.json", 4},
                                                {"gpu_health.json", 2}}) {
    const auto r = run_scenario(file, nodes);
    EXPECT_EQ(r.exit_code, 0) << file << "\n" << r.describe();
    EXPECT_NE(r.out.find("2 verified steps passed"), std::string::npos) << file << "\n"
                                                                        << r.describe();
  }
}

TEST_F(ScenarioRun, StoppedStalledOrCrashedRankEndsTheJobBadly) {
  for (const std::string file : {"stop.json", "stall.json", "crash.json"}) {
    const auto r = run_scenario(file, 2, 10);
    EXPECT_FALSE(r.limit_hit) << file;
    EXPECT_NE(r.exit_code, 0) << file << "\n" << r.describe();
    EXPECT_EQ(r.out.find("train_example: done:"), std::string::npos) << file << "\n"
                                                                     << r.describe();
  }
}

}  // namespace
