// Node health in Slurm: examples/slurm/ringside-node-check run by slurmd itself, as the
// HealthCheckProgram and the Prolog of a private cluster of its own (the ctest fixture
// slurm.health_cluster_start: cluster.sh with TESTCLUSTER_HEALTH_CHECK, a check every 5 s on
// idle nodes). Each test writes the check's configuration into the cluster's hooks/ folder;
// the sim cluster file it names gives node2 a 4x slow GPU 1, or none.  Those files set the
// links inside a node to 0.2 GB/s (docs/nccl_bench.md, scripts/validate-check): a loaded
// 2-core host still delivers that, so the sim paces every transfer by its model.  At the
// sim's default 4 GB/s the host's CPU is what the GPU pairs' sendrecv measures, and one
// healthy pair of node1 read below the others in 14 of 16 passes on a host running the
// whole test suite, which drained node1.
//
// Slurm decides when checks run, so the tests poll node states and the check's log with
// generous deadlines and never assert on timings.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "slurm_harness.h"

namespace ringside::slurm_test {
namespace {

namespace fs = std::filesystem;

// Long enough for a check on a loaded 2-core machine (about 10 s each, two nodes at once).
constexpr int kDeadlineSec = 300;

std::string node_check() {
  return paths().source_dir + "/examples/slurm/ringside-node-check";
}

struct NodeState {
  std::string state;   // sinfo %T: idle, drained, draining, ...
  std::string reason;  // sinfo %E
};

std::map<std::string, NodeState> node_states() {
  std::map<std::string, NodeState> nodes;
  ShellResult r = sh("sinfo -h -N -o '%N|%T|%E'", 30);
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    auto a = line.find('|'), b = line.find('|', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string state = line.substr(a + 1, b - a - 1);
    // A trailing * says slurmctld has not heard from the node lately (slurmd is busy for a
    // moment after a failed Prolog); these tests are about drain and resume, not that.
    if (!state.empty() && state.back() == '*') state.pop_back();
    nodes[line.substr(0, a)] = {state, line.substr(b + 1)};
  }
  return nodes;
}

bool drained(const NodeState& n) {
  return n.state.rfind("drain", 0) == 0;
}

// Polls `done` every second until it holds or the deadline passes; returns whether it held.
bool wait_for(const std::function<bool()>& done, int deadline_s = kDeadlineSec) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return done();
}

class NodeHealth : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(need_binary("nccl_bench"), "") << need_binary("nccl_bench");
    hooks_ = cluster_state()["TESTCLUSTER_DIR"] + "/hooks";
    ASSERT_TRUE(fs::exists(hooks_ + "/health-check"))
        << "the cluster has no health hooks: start it with TESTCLUSTER_HEALTH_CHECK (ctest does)";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fresh_dir(std::string("health-") + info->name());
    log_ = dir_ + "/node-check.log";
    stop_checks();
    resume_all();
  }

  void TearDown() override {
    stop_checks();
    resume_all();
  }

  // The configuration every test starts from, with `changes` (key -> value) applied.
  std::string config(const std::string& cluster_file,
                     const std::map<std::string, std::string>& changes = {}) const {
    std::map<std::string, std::string> keys{
        {"GPUS", "4"},
        {"SIZES", "1M"},
        {"ITERS", "5"},
        {"ACTION", "drain"},
        {"LOG", log_},
        {"STATE_DIR", dir_ + "/state"},
        {"NCCL_BENCH", paths().bin_dir + "/nccl_bench"},
        {"ENV", "\"LD_LIBRARY_PATH=" + paths().sim_lib_dir +
                    " RINGSIM_CLUSTER=" + scenario(cluster_file) + " RINGSIM_NODE=%n\""}};
    for (const auto& [key, value] : changes) keys[key] = value;
    std::string text =
        "# written by the test " +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "\n";
    for (const auto& [key, value] : keys) text += key + "=" + value + "\n";
    return text;
  }

  void write_hook_config(const std::string& hook, const std::string& text) const {
    std::ofstream(hooks_ + "/" + hook + ".conf.tmp") << text;
    fs::rename(hooks_ + "/" + hook + ".conf.tmp", hooks_ + "/" + hook + ".conf");
    sh("cat " + hooks_ + "/" + hook + ".conf");  // into the transcript
  }

  // Without configurations the hooks log that and leave the nodes alone.
  void stop_checks() const {
    fs::remove(hooks_ + "/health-check.conf");
    fs::remove(hooks_ + "/prolog.conf");
    fs::remove(hooks_ + "/epilog.conf");
  }

  static void resume_all() {
    for (const auto& [name, n] : node_states()) {
      if (drained(n)) sh("scontrol update nodename=" + name + " state=resume");
    }
  }

  std::string log_text() const { return read_file(log_); }

  // Why `node` is in the state it is: sinfo's reason, what slurmctld logged about the node,
  // and the check's log. For the message of an assertion on a node's state.
  std::string node_story(const std::string& node) const {
    NodeState n = node_states()[node];
    std::string ctld = cluster_state()["TESTCLUSTER_DIR"] + "/log/slurmctld.log";
    return node + " " + n.state + " (" + n.reason + ")\nslurmctld on " + node + ":\n" +
           sh("grep -F " + node + " " + ctld + " | tail -n 20", 30).out + "check log:\n" +
           log_text();
  }

  // Lines of the check's log from byte `from` on that contain `text`.
  int log_count(const std::string& text, size_t from = 0) const {
    std::string log = log_text();
    int n = 0;
    for (size_t p = log.find(text, from); p != std::string::npos; p = log.find(text, p + 1)) ++n;
    return n;
  }

  std::string hooks_, dir_, log_;
};

TEST_F(NodeHealth, HealthCheckProgramDrainsTheSlowNodeWithItsReasonAndResumeReturnsIt) {
  write_hook_config("health-check", config("health_slow_gpu1_node2.json"));
  bool done = wait_for([&] {
    auto nodes = node_states();
    return drained(nodes["node2"]) && log_count("[node1]: PASS") > 0;
  });
  auto nodes = node_states();
  ASSERT_TRUE(done) << "after " << kDeadlineSec << " s: node1 " << nodes["node1"].state
                    << ", node2 " << nodes["node2"].state << " (" << nodes["node2"].reason
                    << "); log:\n"
                    << log_text();
  sh("sinfo -R -o '%N %E'");  // the reason as admins read it, into the transcript
  EXPECT_EQ(nodes["node1"].state, "idle") << log_text();
  EXPECT_EQ(nodes["node2"].reason.rfind("ringside: GPU 1 device copy", 0), 0u)
      << "reason: " << nodes["node2"].reason;
  EXPECT_EQ(log_count("[node1]: drained"), 0) << log_text();
  EXPECT_GE(log_count("[node2]: drained: ringside: GPU 1 "), 1) << log_text();

  // The GPU is repaired (the sim's cluster file no longer slows it); the admin resumes it.
  write_hook_config("health-check", config("health_two_nodes.json"));
  const size_t repaired_at = log_text().size();
  sh("scontrol update nodename=node2 state=resume");
  // A check that read the old configuration just before the change may still drain node2
  // once more: resume again then, as an admin would, until a check of the repaired node passes.
  done = wait_for([&] {
    auto n2 = node_states()["node2"];
    if (drained(n2)) sh("scontrol update nodename=node2 state=resume");
    return !drained(n2) && log_count("[node2]: PASS", repaired_at) > 0;
  });
  nodes = node_states();
  ASSERT_TRUE(done) << "node2 after the repair: " << nodes["node2"].state << " ("
                    << nodes["node2"].reason << "); log:\n"
                    << log_text();
  EXPECT_EQ(nodes["node2"].state, "idle");
  EXPECT_EQ(nodes["node1"].state, "idle");
}

TEST_F(NodeHealth, AutoResumeReturnsANodeThisCheckDrainedOnceItPasses) {
  sh("scontrol update nodename=node2 state=drain reason='ringside: GPU 1 device copy (an earlier "
     "check)'");
  write_hook_config("health-check", config("health_two_nodes.json", {{"AUTO_RESUME", "yes"}}));
  bool done = wait_for([&] { return log_count("[node2]: resumed: passes now") > 0; });
  auto nodes = node_states();
  ASSERT_TRUE(done) << "node2 " << nodes["node2"].state << "; log:\n" << log_text();
  EXPECT_TRUE(wait_for([&] { return node_states()["node2"].state == "idle"; }, 60));

  // A node drained for another reason is never resumed by the check.
  sh("scontrol update nodename=node1 state=drain reason='cable swap'");
  const size_t from = log_text().size();
  done = wait_for([&] { return log_count("[node1]: PASS", from) > 0; });
  EXPECT_TRUE(done) << log_text();
  nodes = node_states();
  EXPECT_TRUE(drained(nodes["node1"])) << nodes["node1"].state;
  EXPECT_EQ(nodes["node1"].reason, "cable swap");
}

TEST_F(NodeHealth, ACheckThatCannotBeMadeLeavesTheNodesAlone) {
  // nccl_bench missing.
  write_hook_config("health-check", config("health_slow_gpu1_node2.json",
                                           {{"NCCL_BENCH", dir_ + "/no/nccl_bench"}}));
  bool done = wait_for([&] {
    return log_count("[node1]: check not made: nccl_bench not found") > 0 &&
           log_count("[node2]: check not made: nccl_bench not found") > 0;
  });
  EXPECT_TRUE(done) << log_text();
  auto nodes = node_states();
  EXPECT_EQ(nodes["node1"].state, "idle") << node_story("node1");
  EXPECT_EQ(nodes["node2"].state, "idle") << node_story("node2");

  // The measurement cannot finish in its time: validate aborts it after -T (half of
  // TIME_LIMIT), or, on a loaded machine, the whole check overruns TIME_LIMIT and is stopped.
  // Neither drains the slow node.
  const size_t from = log_text().size();
  write_hook_config("health-check", config("health_slow_gpu1_node2.json",
                                           {{"ITERS", "1000000"}, {"TIME_LIMIT", "20"}}));
  done = wait_for([&] {
    return log_count("[node2]: check not made: nccl_bench validate aborted", from) +
               log_count("[node2]: check not made: the check itself did not end within", from) >
           0;
  });
  EXPECT_TRUE(done) << log_text();
  nodes = node_states();
  EXPECT_EQ(nodes["node2"].state, "idle") << node_story("node2");
  EXPECT_EQ(log_count("drained:"), 0) << log_text();
}

TEST_F(NodeHealth, ANodeRunningAJobIsLeftAlone) {
  // Run as slurmd runs it (nothing in the environment but SLURMD_NODENAME and, on the test
  // cluster, SLURM_CONF) while a job holds node2; slurmd's own checks have no configuration.
  std::ofstream(dir_ + "/slow.conf") << config("health_slow_gpu1_node2.json");
  ShellResult sub = sh("sbatch --parsable -w node2 -N1 -n1 -o /dev/null --wrap 'sleep 300'");
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string job = sub.out.substr(0, sub.out.find_first_of(";\n"));
  bool running = wait_for([&] { return sh("squeue -h -j " + job + " -o %T").out == "RUNNING\n"; });
  ASSERT_TRUE(running) << sh("squeue").out;
  ShellResult r =
      sh("env -i SLURMD_NODENAME=node2 SLURM_CONF=$SLURM_CONF RINGSIDE_NODE_CHECK_CONF=" + dir_ +
         "/slow.conf " + node_check());
  sh("scancel " + job);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(log_count("[node2]: check not made: node state "), 1) << log_text();
  EXPECT_EQ(log_count("health check: nccl_bench"), 0) << log_text();
  EXPECT_FALSE(drained(node_states()["node2"]));
}

// A Prolog or Epilog may run as long as PrologEpilogTimeout allows (unlimited here): the
// check's own limit is set well above the ~30 s its validate takes on a quiet 2-core host,
// which the default 50 s does not leave when another test loads the host.
constexpr const char* kHookTimeLimit = "200";

TEST_F(NodeHealth, PrologDrainsTheSlowNodeAndTheJobDoesNotRunThere) {
  write_hook_config("prolog",
                    config("health_slow_gpu1_node2.json", {{"TIME_LIMIT", kHookTimeLimit}}));
  const std::string ran = dir_ + "/ran";
  ShellResult sub =
      sh("sbatch --parsable -w node2 -N1 -n1 -o " + dir_ + "/job.out --wrap 'touch " + ran + "'");
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string job = sub.out.substr(0, sub.out.find_first_of(";\n"));
  bool done = wait_for([&] { return drained(node_states()["node2"]); });
  auto nodes = node_states();
  ASSERT_TRUE(done) << "node2 " << nodes["node2"].state << "; log:\n" << log_text();
  sh("sinfo -R -o '%N %E'; scontrol show job " + job);
  EXPECT_GE(log_count("[node2]: prolog check: "), 1) << log_text();
  EXPECT_GE(log_count("[node2]: drained: ringside: GPU 1 "), 1) << log_text();
  // Slurm drains the node of a failing Prolog itself; the check's reason goes first.
  EXPECT_NE(nodes["node2"].reason.find("ringside: GPU 1"), std::string::npos)
      << "reason: " << nodes["node2"].reason;
  EXPECT_FALSE(fs::exists(ran)) << "the job ran on the drained node";
  sh("scancel " + job);
}

TEST_F(NodeHealth, EpilogDrainsTheSlowNodeAfterTheJob) {
  write_hook_config("epilog",
                    config("health_slow_gpu1_node2.json", {{"TIME_LIMIT", kHookTimeLimit}}));
  const std::string ran = dir_ + "/ran";
  // The Prolog has no configuration: it logs that and lets the job run.
  ShellResult job =
      sh("sbatch --wait -w node2 -N1 -n1 -o " + dir_ + "/job.out --wrap 'touch " + ran + "'",
         kDeadlineSec);
  EXPECT_FALSE(job.timed_out);
  EXPECT_TRUE(fs::exists(ran)) << "the job did not run: " << job.out << job.err;
  bool done = wait_for([&] { return drained(node_states()["node2"]); });
  auto nodes = node_states();
  ASSERT_TRUE(done) << "node2 " << nodes["node2"].state << "; log:\n" << log_text();
  sh("sinfo -R -o '%N %E'");
  EXPECT_GE(log_count("[node2]: epilog check: "), 1) << log_text();
  EXPECT_EQ(nodes["node2"].reason.rfind("ringside: GPU 1 device copy", 0), 0u)
      << "reason: " << nodes["node2"].reason;
  EXPECT_EQ(nodes["node1"].state, "idle");
}

TEST_F(NodeHealth, BadConfigurationIsRejectedNamingTheSetting) {
  std::ofstream(dir_ + "/bad.conf") << "LEVEL=medium\nGPUS=0x4\nTIME_LIMIT=010\nFOO=1\n";
  ShellResult r = sh("RINGSIDE_NODE_CHECK_ACTION=dran " + node_check() + " --config " + dir_ +
                     "/bad.conf --node node2");
  EXPECT_EQ(r.exit_code, 2);
  for (const char* what :
       {"LEVEL 'medium' (from " /* file:line */, "GPUS '0x4'", "TIME_LIMIT '010'",
        "unknown key 'FOO'",
        "ACTION 'dran' (from RINGSIDE_NODE_CHECK_ACTION): use drain or report"}) {
    EXPECT_NE(r.err.find(what), std::string::npos) << what << " not in:\n" << r.err;
  }
  // As a Prolog the same mistake must not drain the node (a failing Prolog would).
  r = sh("SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_ID=1 " + node_check() + " --config " + dir_ +
         "/bad.conf --node node2");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown key 'FOO'"), std::string::npos) << r.err;
  EXPECT_EQ(node_states()["node2"].state, "idle");

  // slurmd kills a HealthCheckProgram after 60 s: a longer limit is a mistake there only.
  std::ofstream(dir_ + "/empty.conf").flush();
  const std::string check = node_check() + " --check-config --config " + dir_ + "/empty.conf";
  r = sh("SLURMD_NODENAME=node2 RINGSIDE_NODE_CHECK_TIME_LIMIT=100 " + check);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("TIME_LIMIT '100' (from RINGSIDE_NODE_CHECK_TIME_LIMIT): slurmd kills"),
            std::string::npos)
      << r.err;
  r = sh("SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_ID=1 RINGSIDE_NODE_CHECK_TIME_LIMIT=100 " +
         check);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("TIME_LIMIT=100\t"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ringside::slurm_test
