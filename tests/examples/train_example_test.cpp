// train_example on the sim: the binary is linked against the real CUDA and
// NCCL libraries and runs on the sim through LD_LIBRARY_PATH, launched by
// simrun (environment bootstrap) or mpirun (MPI bootstrap).

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "launcher.h"
#include "process_runner.h"

namespace {

using ringside::testing::count_lines_with;
using ringside::testing::Process;
using ringside::testing::ProcessResult;
using ringside::testing::run;

const std::string kSimrun = RINGSIDE_TEST_SIMRUN;
const std::string kTrain = RINGSIDE_TEST_TRAIN_EXAMPLE;
const std::string kSimLib = RINGSIDE_TEST_SIM_LIB_DIR;
const std::string kScenarios = RINGSIDE_TEST_SCENARIO_DIR;
const std::string kMpirun = RINGSIDE_TEST_MPIEXEC;

// Small, fast runs: 2 cores are shared by up to 8 ranks.
const std::vector<std::string> kQuick = {"--steps",       "6",    "--compute-ms",    "2",
                                         "--bucket-mb",   "0.25", "--buckets",       "3",
                                         "--check-every", "2",    "--activation-mb", "0.0625"};

class TrainExample : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* lib : {"libcudart.so.13", "libnccl.so.2"}) {
      ASSERT_TRUE(std::filesystem::exists(kSimLib + "/" + lib))
          << kSimLib << "/" << lib << " is missing: build the sim libraries first";
    }
  }

  std::vector<std::string> sim_env() const { return {"LD_LIBRARY_PATH=" + kSimLib}; }

  ProcessResult simrun(int ranks, int nodes, std::vector<std::string> train_flags,
                       const std::string& cluster = "healthy.json", double timeout_s = 0) {
    std::vector<std::string> argv = {kSimrun, "-n", std::to_string(ranks), "--nodes",
                                     std::to_string(nodes)};
    if (!cluster.empty()) argv.insert(argv.end(), {"--cluster", kScenarios + "/" + cluster});
    if (timeout_s > 0) {
      argv.insert(argv.end(), {"--timeout", std::to_string(timeout_s), "--kill-after", "2"});
    }
    argv.insert(argv.end(), {"--", kTrain});
    argv.insert(argv.end(), train_flags.begin(), train_flags.end());
    return run(argv, sim_env(), 240);
  }

  static std::vector<std::string> quick(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = kQuick;
    flags.insert(flags.end(), extra.begin(), extra.end());
    return flags;
  }

  // Steps 2, 4, 6 are verified with --check-every 2 --steps 6.
  static void expect_verified_run(const ProcessResult& r, int world) {
    EXPECT_FALSE(r.limit_hit);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_NE(r.out.find("world " + std::to_string(world) + " "), std::string::npos)
        << r.describe();
    EXPECT_NE(r.out.find("3 verified steps passed"), std::string::npos) << r.describe();
    EXPECT_EQ(count_lines_with(r.out, "train_example: done:"), 1) << "rank 0 only";
  }
};

TEST_F(TrainExample, DataParallelOn2Ranks) {
  expect_verified_run(simrun(2, 1, quick()), 2);
}

TEST_F(TrainExample, DataParallelOn4RanksOver2Nodes) {
  expect_verified_run(simrun(4, 2, quick()), 4);
}

TEST_F(TrainExample, DataParallelOn8RanksOver2Nodes) {
  const auto r = simrun(8, 2, quick({"--imbalance", "data", "--jitter", "0.1"}));
  expect_verified_run(r, 8);
  EXPECT_NE(r.out.find("dp 8 x tp 1 x pp 1"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("sim"), std::string::npos) << "the device name should say it is the sim\n"
                                                  << r.describe();
}

TEST_F(TrainExample, TensorParallelGroups) {
  const auto r = simrun(4, 2, quick({"--tp", "2"}));
  expect_verified_run(r, 4);
  EXPECT_NE(r.out.find("dp 2 x tp 2 x pp 1"), std::string::npos) << r.describe();
}

TEST_F(TrainExample, PipelineStagesWithTensorParallel) {
  const auto r = simrun(8, 2,
                        quick({"--tp", "2", "--pp", "2", "--microbatches", "3", "--imbalance",
                               "pipeline", "--heavy-factor", "2"}));
  expect_verified_run(r, 8);
  EXPECT_NE(r.out.find("dp 2 x tp 2 x pp 2"), std::string::npos) << r.describe();
}

// PyTorch's new_group: every group from its own unique id, no parent communicator.
TEST_F(TrainExample, HybridGroupsFromUniqueIds) {
  const auto r = simrun(8, 2,
                        quick({"--tp", "2", "--pp", "2", "--dp", "2", "--comm-init", "uniqueid",
                               "--microbatches", "3"}));
  expect_verified_run(r, 8);
  EXPECT_NE(r.out.find("dp 2 x tp 2 x pp 2, groups by uniqueid"), std::string::npos)
      << r.describe();
}

TEST_F(TrainExample, HybridGroupsFromUniqueIdsOverMpi) {
  std::vector<std::string> argv = {kMpirun,           "-np", "4",
                                   "--oversubscribe", "-x",  "LD_LIBRARY_PATH=" + kSimLib};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.push_back(kTrain);
  for (const auto& f : quick({"--tp", "2", "--comm-init", "uniqueid"})) argv.push_back(f);
  const auto r = run(argv, {"OMPI_MCA_btl=self,tcp", "OMPI_MCA_pml=ob1"}, 240);
  expect_verified_run(r, 4);
  EXPECT_NE(r.out.find("groups by uniqueid"), std::string::npos) << r.describe();
}

TEST_F(TrainExample, FourStagePipeline) {
  const auto r = simrun(4, 2, quick({"--pp", "4"}));
  expect_verified_run(r, 4);
  EXPECT_NE(r.out.find("dp 1 x tp 1 x pp 4"), std::string::npos) << r.describe();
}

TEST_F(TrainExample, FsdpAllGatherAndReduceScatter) {
  const auto r = simrun(4, 2, quick({"--fsdp"}));
  expect_verified_run(r, 4);
  EXPECT_NE(r.out.find("all-gather + reduce-scatter"), std::string::npos) << r.describe();
}

TEST_F(TrainExample, MpiBootstrap) {
  std::vector<std::string> argv = {kMpirun,           "-np", "4",
                                   "--oversubscribe", "-x",  "LD_LIBRARY_PATH=" + kSimLib};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.push_back(kTrain);
  for (const auto& f : quick()) argv.push_back(f);
  // mpirun itself must not pick up the sim's libraries, hence no sim_env() here.
  const auto r = run(argv, {"OMPI_MCA_btl=self,tcp", "OMPI_MCA_pml=ob1"}, 240);
  expect_verified_run(r, 4);
  EXPECT_NE(r.out.find("bootstrap mpi"), std::string::npos) << r.describe();
}

TEST_F(TrainExample, SlurmBootstrapWithoutMpi) {
  // What srun gives each task, plus the NCCL_COMM_ID the user exports.
  const std::string comm_id =
      "NCCL_COMM_ID=127.0.0.1:" + std::to_string(ringside::sim::find_free_port());
  std::vector<std::string> argv = {kTrain};
  for (const auto& f : quick()) argv.push_back(f);
  std::vector<std::unique_ptr<Process>> tasks;
  for (int task = 0; task < 2; ++task) {
    tasks.push_back(std::make_unique<Process>(
        argv, std::vector<std::string>{
                  "SLURM_PROCID=" + std::to_string(task), "SLURM_NTASKS=2",
                  "SLURM_LOCALID=" + std::to_string(task), "SLURMD_NODENAME=node1",
                  "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", comm_id, "LD_LIBRARY_PATH=" + kSimLib}));
  }
  const auto rank0 = tasks[0]->wait(120);
  const auto rank1 = tasks[1]->wait(120);
  expect_verified_run(rank0, 2);
  EXPECT_NE(rank0.out.find("bootstrap slurm"), std::string::npos) << rank0.describe();
  EXPECT_EQ(rank1.exit_code, 0) << rank1.describe();
  EXPECT_TRUE(rank1.out.empty()) << "only rank 0 prints\n" << rank1.describe();
}

TEST_F(TrainExample, HungRankIsKilledByTheTimeLimit) {
  const auto r = simrun(4, 2, quick({"--hang-rank", "2", "--hang-step", "3"}), "healthy.json", 8);
  EXPECT_FALSE(r.limit_hit) << r.describe();
  EXPECT_TRUE(r.exit_code == 128 + SIGTERM || r.exit_code == 128 + SIGKILL) << r.describe();
  EXPECT_NE(r.err.find("rank 2 stops before step 3"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("time limit"), std::string::npos) << r.describe();
  EXPECT_EQ(r.out.find("train_example: done:"), std::string::npos) << r.describe();
}

TEST_F(TrainExample, DesyncedRankNeverFinishesCleanly) {
  // A mismatched collective cannot succeed everywhere: NCCL hangs or fails.
  const auto r =
      simrun(4, 1, quick({"--desync-rank", "1", "--desync-step", "2"}), "healthy.json", 8);
  EXPECT_FALSE(r.limit_hit) << r.describe();
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("rank 1 issues a mismatched count at step 2"), std::string::npos)
      << r.describe();
}

TEST_F(TrainExample, WrongContributionFailsTheCheckOnEveryRank) {
  const auto r = simrun(4, 2, quick({"--corrupt-rank", "3", "--corrupt-step", "4"}));
  EXPECT_FALSE(r.limit_hit);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  // Every rank sees the wrong sum, not only the one that contributed it.
  EXPECT_EQ(count_lines_with(r.err, "verification failed: step 4, all-reduce of gradient bucket 0"),
            4)
      << r.describe();
}

TEST_F(TrainExample, RunsWithoutALauncherAsOneRank) {
  std::vector<std::string> argv = {kTrain};
  for (const auto& f : quick()) argv.push_back(f);
  const auto r = run(argv, sim_env(), 120);
  expect_verified_run(r, 1);
}

TEST_F(TrainExample, RejectsBadFlagsAndEnvironments) {
  const std::vector<std::vector<std::string>> bad_flags = {
      {"--steps", "0"},
      {"--steps", "5x"},
      {"--bucket-mb", "-1"},
      {"--imbalance", "sometimes"},
      {"--imbalance", "pipeline"},                    // needs --pp >= 2
      {"--tp", "3"},                                  // does not divide the world of 2
      {"--hang-rank", "1"},                           // without --hang-step
      {"--hang-rank", "5", "--hang-step", "1"},       // no such rank
      {"--desync-rank", "0", "--desync-step", "50"},  // beyond --steps
      {"--corrupt-rank", "0", "--corrupt-step", "3", "--check-every", "2"},  // not verified
      {"--no-such-flag"},
      {"--dp", "3"},             // world 2 / (tp 1 x pp 1) is 2
      {"--comm-init", "magic"},  // split or uniqueid
  };
  for (const auto& flags : bad_flags) {
    std::vector<std::string> argv = {kTrain};
    argv.insert(argv.end(), flags.begin(), flags.end());
    // A world of two ranks, without starting the second one: validation comes first.
    const auto r = run(argv,
                       {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "NCCL_COMM_ID=127.0.0.1:1",
                        "LD_LIBRARY_PATH=" + kSimLib},
                       60);
    std::string joined;
    for (const auto& f : flags) joined += f + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.describe();
    EXPECT_FALSE(r.err.empty()) << joined;
  }
  const auto no_comm_id =
      run({kTrain}, {"RANK=0", "WORLD_SIZE=2", "NCCL_COMM_ID=", "LD_LIBRARY_PATH=" + kSimLib}, 60);
  EXPECT_EQ(no_comm_id.exit_code, 2) << no_comm_id.describe();
  EXPECT_NE(no_comm_id.err.find("NCCL_COMM_ID"), std::string::npos);
  const auto bad_rank =
      run({kTrain}, {"RANK=one", "WORLD_SIZE=2", "LD_LIBRARY_PATH=" + kSimLib}, 60);
  EXPECT_EQ(bad_rank.exit_code, 2) << bad_rank.describe();
  EXPECT_NE(bad_rank.err.find("RANK='one'"), std::string::npos) << bad_rank.describe();
}

}  // namespace
