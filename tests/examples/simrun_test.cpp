// simrun: rank placement, the environment of each rank, exit statuses, the
// time limit, signal forwarding and flag validation. Needs no GPU and no sim.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <thread>

#include "launcher.h"
#include "process_runner.h"
#include "rank_layout.h"

namespace {

using ringside::testing::count_lines_with;
using ringside::testing::Process;
using ringside::testing::run;

const std::string kSimrun = RINGSIDE_TEST_SIMRUN;

std::vector<std::string> simrun(std::vector<std::string> flags, const std::string& script) {
  std::vector<std::string> argv = {kSimrun};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  return argv;
}

TEST(SimrunLayout, BlocksLikeSlurm) {
  const auto even = ringside::sim::place_ranks(8, 2);
  ASSERT_EQ(even.size(), 8u);
  EXPECT_EQ(even[3].node_name, "node1");
  EXPECT_EQ(even[4].node_name, "node2");
  EXPECT_EQ(even[4].local_rank, 0);
  EXPECT_EQ(even[7].local_rank, 3);
  EXPECT_EQ(even[7].local_world_size, 4);

  const auto uneven = ringside::sim::place_ranks(5, 2);  // 3 + 2
  EXPECT_EQ(uneven[2].node_name, "node1");
  EXPECT_EQ(uneven[2].local_world_size, 3);
  EXPECT_EQ(uneven[3].node_name, "node2");
  EXPECT_EQ(uneven[3].local_rank, 0);
  EXPECT_EQ(uneven[4].local_world_size, 2);

  EXPECT_THROW(ringside::sim::place_ranks(2, 3), std::invalid_argument);
  EXPECT_THROW(ringside::sim::place_ranks(0, 1), std::invalid_argument);
}

TEST(SimrunLayout, MergeEnvReplacesAndAdds) {
  char a[] = "RANK=9";
  char b[] = "KEEP=1";
  char* base[] = {a, b, nullptr};
  const auto merged = ringside::sim::merge_env(base, {{"RANK", "0"}, {"NEW", "x"}});
  EXPECT_EQ(merged, (std::vector<std::string>{"KEEP=1", "RANK=0", "NEW=x"}));
}

// The rendezvous port must not be one an outgoing connection can be given
// (ranks of other jobs connect all the time) before rank 0 listens on it.
TEST(SimrunLayout, FreePortIsBelowTheEphemeralRange) {
  int lo = 0;
  int hi = 0;
  std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fscanf(f, "%d %d", &lo, &hi), 2);
  std::fclose(f);
  if (lo < 11000) GTEST_SKIP() << "the ephemeral range starts at " << lo;
  std::set<int> seen;
  for (int i = 0; i < 20; ++i) {
    const int port = ringside::sim::find_free_port();
    EXPECT_GE(port, 10000);
    EXPECT_LT(port, lo);
    seen.insert(port);
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << port;
    close(fd);
  }
  EXPECT_GT(seen.size(), 10u) << "ports are not spread: parallel jobs would collide";
}

TEST(Simrun, GivesEveryRankItsEnvironment) {
  const auto r =
      run(simrun({"-n", "4", "--nodes", "2"},
                 "echo ENV $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $RINGSIM_NODE "
                 "$RINGSIDE_NODE_NAME $NCCL_COMM_ID $RINGSIDE_JOB_ID"),
          {"RINGSIDE_JOB_ID="});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::set<std::string> lines;
  std::set<std::string> comm_ids, job_ids;
  std::istringstream in(r.out);
  std::string tag, rank, local, world, local_world, node, node_name, comm_id, job_id;
  while (in >> tag >> rank >> local >> world >> local_world >> node >> node_name >> comm_id >>
         job_id) {
    ASSERT_EQ(tag, "ENV");
    lines.insert(rank + " " + local + " " + world + " " + local_world + " " + node + " " +
                 node_name);
    comm_ids.insert(comm_id);
    job_ids.insert(job_id);
  }
  EXPECT_EQ(lines, (std::set<std::string>{"0 0 4 2 node1 node1", "1 1 4 2 node1 node1",
                                          "2 0 4 2 node2 node2", "3 1 4 2 node2 node2"}))
      << r.describe();
  ASSERT_EQ(comm_ids.size(), 1u);
  EXPECT_EQ(comm_ids.begin()->rfind("127.0.0.1:", 0), 0u) << *comm_ids.begin();
  ASSERT_EQ(job_ids.size(), 1u);
  EXPECT_NE(job_ids.begin()->find("simrun-"), std::string::npos);
}

TEST(Simrun, KeepsAnInheritedJobIdAndExportsTheClusterFile) {
  const auto r = run(simrun({"-n", "2", "--cluster", RINGSIDE_TEST_SCENARIO_DIR "/healthy.json"},
                            "echo JOB $RINGSIDE_JOB_ID $RINGSIM_CLUSTER"),
                     {"RINGSIDE_JOB_ID=job-42"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(count_lines_with(r.out, "JOB job-42 /"), 2) << r.describe();
  EXPECT_EQ(count_lines_with(r.out, "scenarios/healthy.json"), 2) << r.describe();
}

TEST(Simrun, ReturnsTheFirstNonZeroStatus) {
  const auto ok = run(simrun({"-n", "3"}, "exit 0"));
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
  // Rank 2 fails first; rank 1 fails later with another status.
  const auto r = run(simrun({"-n", "3"},
                            "if [ $RANK = 2 ]; then exit 7; fi; "
                            "if [ $RANK = 1 ]; then sleep 1; exit 3; fi; exit 0"));
  EXPECT_EQ(r.exit_code, 7) << r.describe();
  EXPECT_NE(r.err.find("rank 2"), std::string::npos) << r.describe();
}

TEST(Simrun, ReportsASignalAs128PlusSignal) {
  const auto r = run(simrun({"-n", "2"}, "if [ $RANK = 1 ]; then kill -SEGV $$; fi; exit 0"));
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.describe();
}

TEST(Simrun, TimeLimitTerminatesAHungJob) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run(simrun({"-n", "3", "--timeout", "1s"}, "sleep 60"), {}, 30);
  EXPECT_FALSE(r.limit_hit);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.describe();
  EXPECT_NE(r.err.find("time limit"), std::string::npos) << r.describe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(25));
}

TEST(Simrun, TimeLimitEscalatesToSigkill) {
  // Every rank ignores SIGTERM, as a stuck process might.
  const auto r = run(simrun({"-n", "2", "--timeout", "500ms", "--kill-after", "500ms"},
                            "trap '' TERM; while true; do sleep 0.1; done"),
                     {}, 30);
  EXPECT_FALSE(r.limit_hit);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.describe();
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.describe();
}

TEST(Simrun, TimeLimitIsNeverASuccess) {
  // The ranks catch SIGTERM and exit 0, as a graceful shutdown handler might.
  const auto r = run(simrun({"-n", "2", "--timeout", "500ms"},
                            "trap 'exit 0' TERM; while true; do sleep 0.1; done"),
                     {}, 30);
  EXPECT_FALSE(r.limit_hit);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.describe();
}

TEST(Simrun, ForwardsSigtermToTheRanks) {
  Process p(simrun({"-n", "2"}, "echo started; sleep 60"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  p.signal(SIGTERM);
  const auto r = p.wait(30);
  EXPECT_FALSE(r.limit_hit);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.describe();
  EXPECT_NE(r.err.find("forwarding"), std::string::npos) << r.describe();
}

TEST(Simrun, KillOnBadExitStopsThePeers) {
  const auto r =
      run(simrun({"-n", "3", "-K"}, "if [ $RANK = 0 ]; then exit 4; fi; sleep 60"), {}, 30);
  EXPECT_FALSE(r.limit_hit);
  EXPECT_EQ(r.exit_code, 4) << r.describe();
}

TEST(Simrun, RejectsBadFlags) {
  const std::vector<std::vector<std::string>> bad = {
      {kSimrun, "--", "/bin/true"},                             // -n missing
      {kSimrun, "-n", "0", "--", "/bin/true"},                  // no ranks
      {kSimrun, "-n", "2x", "--", "/bin/true"},                 // junk number
      {kSimrun, "-n", "2", "--nodes", "3", "--", "/bin/true"},  // more nodes than ranks
      {kSimrun, "-n", "2", "--timeout", "5parsecs", "--", "/bin/true"},
      {kSimrun, "-n", "2", "--kill-after", "-1", "--", "/bin/true"},
      {kSimrun, "-n", "2", "--cluster", "/nonexistent.json", "--", "/bin/true"},
      {kSimrun, "-n", "2", "--bogus", "--", "/bin/true"},
      {kSimrun, "-n", "2", "/bin/true"},  // '--' missing
      {kSimrun, "-n", "2", "--"},         // no program
      {kSimrun, "-n", "2", "--", "/nonexistent/program"},
      {kSimrun, "-n", "2", "--", "no-such-program-in-path"},
  };
  for (const auto& argv : bad) {
    const auto r = run(argv);
    std::string joined;
    for (const auto& a : argv) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.describe();
    EXPECT_FALSE(r.err.empty()) << joined;
    EXPECT_TRUE(r.out.empty()) << joined << ": errors belong on stderr";
  }
  const auto help = run({kSimrun, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--timeout"), std::string::npos);
}

}  // namespace
