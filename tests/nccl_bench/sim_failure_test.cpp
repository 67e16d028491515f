// Ranks that die or stop responding: the survivors notice (ncclCommGetAsyncError
// or -T), abort, name the lost peer where they can and exit with the documented
// code on their own, long before the launcher's time limit; benchmarks end their
// traces properly.  The time from the kill to the end of the job is printed
// (speed is never asserted).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process_util.h"

namespace ringside::bench::testing {
namespace {

// Far below simrun's time limit (300 s in sim_command), so that a hang fails
// the test instead of being ended by the launcher.
constexpr double kJobSeconds = 240;

class SimFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(sim_available(&why)) << why;
    dir_ = temp_dir("failure");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string cluster(const std::string& name) { return std::string(TEST_DATA_DIR) + "/" + name; }

  std::string dir_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// simrun's line for a rank that ended with `status`.
bool rank_exited_with(const std::string& err, int rank, int status) {
  const std::string head = "simrun: rank " + std::to_string(rank) + " (";
  const std::string tail = "exited with status " + std::to_string(status);
  for (const std::string& l : lines_of(err)) {
    if (l.rfind(head, 0) == 0 && l.find(tail) != std::string::npos) return true;
  }
  return false;
}

// The message line a rank printed with `prefix`, or "".
std::string message_of(const std::string& err, const std::string& prefix, int rank) {
  const std::string head = prefix + "rank " + std::to_string(rank) + " on ";
  for (const std::string& l : lines_of(err)) {
    if (l.rfind(head, 0) == 0) return l;
  }
  return "";
}

// The pid nccl_bench printed for `rank` in its "# Using devices" header.
long header_pid(const std::string& out, int rank) {
  for (const std::string& l : lines_of(out)) {
    std::istringstream in(l);
    std::string hash, word, group_word, pid_word;
    int r = -1, group = -1;
    long pid = -1;
    if (in >> hash >> word >> r >> group_word >> group >> pid_word >> pid && hash == "#" &&
        word == "Rank" && pid_word == "Pid" && r == rank) {
      return pid;
    }
  }
  return -1;
}

bool has_table_row(const std::string& out) {
  for (const std::string& l : lines_of(out)) {
    if (!l.empty() && l[0] != '#') return true;
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// 4 ranks on 2 nodes over slow links (sizes up to 16M take seconds each); rank 3
// is SIGKILLed once the first row is printed, i.e. in the middle of the run.
TEST_F(SimFailure, BenchmarkSurvivorsNameTheKilledRankAndExitWithTwo) {
  const Background job = start_background(
      sim_command(4, 2, "all_reduce -b 1K -e 16M -f 4 -n 20 --trace-dir " + dir_ + "/traces",
                  cluster("healthy_4x2.json")));
  ASSERT_GT(job.pid, 0);
  ASSERT_TRUE(wait_for_file(job.out, kJobSeconds, has_table_row)) << read_file(job.err);
  const long victim = header_pid(read_file(job.out), 3);
  ASSERT_GT(victim, 0) << read_file(job.out);
  ASSERT_EQ(kill(static_cast<pid_t>(victim), SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  const int rc = wait_background(job, kJobSeconds);
  const double detect = seconds_since(killed);
  const std::string err = read_file(job.err);
  ASSERT_NE(rc, -1) << "the survivors hung after rank 3 was killed\n" << err;
  std::cout << "[ time    ] kill of rank 3 to the end of the job: " << detect << " s\n";

  EXPECT_EQ(err.find("time limit"), std::string::npos) << err;
  bool named = false;
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(rank_exited_with(err, r, 2)) << "rank " << r << "\n" << err;
    const std::string m = message_of(err, "nccl_bench: error: ", r);
    EXPECT_NE(m.find("lost peer rank "), std::string::npos) << "rank " << r << "\n" << err;
    EXPECT_NE(m.find("on the world communicator"), std::string::npos) << m;
    named = named || (m.find("lost peer rank 3 on node2 (") != std::string::npos &&
                      m.find("pid " + std::to_string(victim) + ")") != std::string::npos);
  }
  EXPECT_TRUE(named) << "no survivor names the killed rank 3 (pid " << victim << ")\n" << err;

  // Each survivor's trace ends properly: the error, the abort and the clean end
  // of tracing (event kinds 8, 7, 9).
  const auto py = run_shell(
      "/usr/bin/python3 -c \"import h5py,glob\n"
      "n=0\n"
      "for f in sorted(glob.glob('" +
      dir_ +
      "/traces/*-r00000[012].h5')):\n"
      "  k=[int(x) for x in h5py.File(f,'r')['events']['kind']]\n"
      "  assert k[-3:]==[8,7,9], (f,k)\n"
      "  n+=1\n"
      "print('ok', n)\"");
  EXPECT_NE(py.out.find("ok 3"), std::string::npos) << py.out << py.err;
}

// validate on 4 nodes x 2 GPUs: rank 5 (node3) is SIGKILLed during the
// intra-node test (once its intra-node communicator is up); every survivor
// reports FAIL and exits 1, rank 0 ends the output and the JSON with the
// abort, and rank 5's node mate names it.
TEST_F(SimFailure, ValidateFailsWhenARankIsKilled) {
  const std::string json = dir_ + "/v.json";
  // RINGSIM_DEBUG makes the sim print when each communicator is connected.
  const Background job = start_background(
      "env RINGSIM_DEBUG=1 " + sim_command(8, 4,
                                           "validate --sizes 4M -n 200 --fleet-threshold 30 "
                                           "--json " +
                                               json,
                                           cluster("healthy_4x2.json")));
  ASSERT_GT(job.pid, 0);
  pid_t victim = -1;
  for (double waited = 0; victim < 0 && waited < kJobSeconds; waited += 0.05) {
    victim = child_with_env(job.pid, "RANK", "5");
    if (victim < 0) sleep_seconds(0.05);
  }
  ASSERT_GT(victim, 0);
  const std::string connected = "[pid " + std::to_string(victim) + "]: comm ";
  ASSERT_TRUE(wait_for_file(job.err, kJobSeconds, [&](const std::string& err) {
    for (const std::string& l : lines_of(err)) {
      if (l.find(connected) != std::string::npos && l.find("comm index 1)") != std::string::npos)
        return true;
    }
    return false;
  })) << read_file(job.err);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  const int rc = wait_background(job, kJobSeconds);
  const double detect = seconds_since(killed);
  const std::string err = read_file(job.err);
  const std::string out = read_file(job.out);
  ASSERT_NE(rc, -1) << "the survivors hung after rank 5 was killed\n" << err;
  std::cout << "[ time    ] kill of rank 5 to the end of validate: " << detect << " s\n";

  EXPECT_EQ(err.find("time limit"), std::string::npos) << err;
  for (int r = 0; r < 8; ++r) {
    if (r == 5) continue;
    EXPECT_TRUE(rank_exited_with(err, r, 1)) << "rank " << r << "\n" << err;
    EXPECT_NE(message_of(err, "nccl_bench validate: FAIL: ", r), "") << "rank " << r << "\n" << err;
  }
  // Its node mate shares a two-rank communicator with it: no doubt who is lost.
  const std::string mate = message_of(err, "nccl_bench validate: FAIL: ", 4);
  EXPECT_NE(mate.find("lost peer rank 5 on node3 ("), std::string::npos) << mate;
  EXPECT_NE(mate.find("pid " + std::to_string(victim) + ";"), std::string::npos) << mate;
  EXPECT_NE(mate.find("intra-node communicator of node3"), std::string::npos) << mate;

  EXPECT_NE(out.find("# verdict: FAIL (aborted: rank 0 on node1"), std::string::npos) << out;
  EXPECT_EQ(out.find("scontrol"), std::string::npos) << out;
  const auto j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["aborted"]["rank"], 0);
  EXPECT_EQ(j["nodes"].size(), 0u);
  EXPECT_EQ(j["drain_commands"].size(), 0u);
}

// A rank whose op never finishes and that does not die: NCCL reports nothing,
// and every rank gives up after -T with exit code 2.
TEST_F(SimFailure, UnresponsiveRankIsCaughtByTheTimeout) {
  const std::string frozen = dir_ + "/freeze.json";
  std::ofstream(frozen) << R"({"gpus_per_node": 2, "nodes": 2,
    "faults": {"freeze": {"rank": 3, "comm": "world", "op": 30}}})";
  const Background job =
      start_background(sim_command(4, 2, "all_reduce -b 8 -e 8 -n 1000 -w 0 -T 15", frozen));
  ASSERT_GT(job.pid, 0);
  const int rc = wait_background(job, kJobSeconds);
  const std::string err = read_file(job.err);
  ASSERT_NE(rc, -1) << "hung despite -T 15\n" << err;
  EXPECT_EQ(rc, 2) << err;
  EXPECT_EQ(err.find("time limit"), std::string::npos) << err;
  bool timed_out = false;
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(rank_exited_with(err, r, 2)) << "rank " << r << "\n" << err;
    const std::string m = message_of(err, "nccl_bench: error: ", r);
    EXPECT_NE(m, "") << "rank " << r << "\n" << err;
    timed_out = timed_out || m.find("did not finish within 15 s (-T)") != std::string::npos;
  }
  EXPECT_TRUE(timed_out) << err;
}

// A rank that never starts: the others cannot be polled inside ncclCommInitRank;
// its deadline (-T) ends them with exit code 2 and a message that says so.
TEST_F(SimFailure, RankThatNeverJoinsEndsInitAtTheTimeout) {
  // Rank 2 sleeps past the others' deadline, then ends the job.
  const std::string cmd = std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " + SIMRUN_BIN +
                          " -n 3 -t 300 -- /bin/sh -c 'if [ \"$RANK\" = 2 ]; then exec sleep "
                          "30; fi; exec " NCCL_BENCH_BIN " all_reduce -b 8 -e 8 -T 10'";
  const Background job = start_background(cmd);
  ASSERT_GT(job.pid, 0);
  const int rc = wait_background(job, kJobSeconds);
  const std::string err = read_file(job.err);
  ASSERT_NE(rc, -1) << "init hung despite -T 10\n" << err;
  EXPECT_EQ(err.find("time limit"), std::string::npos) << err;
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(rank_exited_with(err, r, 2)) << "rank " << r << "\n" << err;
  }
  EXPECT_NE(err.find("creating the NCCL communicators (ncclCommInitRank, 3 ranks) did not finish "
                     "within 10 s (-T)"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace ringside::bench::testing
