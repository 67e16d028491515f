// Launcher identity resolution (shared by the probe and nccl_bench): launcher
// order, nested launchers, bad values, job ids and node names.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ringside/launcher_identity.h"

namespace ringside {
namespace {

LauncherIdentityResult resolve(const std::map<std::string, std::string>& env,
                               const std::string& job = "", const std::string& node = "") {
  return resolve_launcher_identity(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      job, node, "host-a");
}

TEST(LauncherIdentity, SlurmFirst) {
  auto r = resolve({{"SLURM_PROCID", "5"},
                    {"SLURM_NTASKS", "16"},
                    {"SLURM_LOCALID", "1"},
                    {"SLURM_JOB_ID", "777"},
                    {"SLURMD_NODENAME", "gpu07"},
                    {"OMPI_COMM_WORLD_RANK", "5"},
                    {"OMPI_COMM_WORLD_SIZE", "16"}});
  EXPECT_EQ(r.identity.rank, 5);
  EXPECT_EQ(r.identity.world_size, 16);
  EXPECT_EQ(r.identity.local_rank, 1);
  EXPECT_EQ(r.identity.rank_source, "slurm");
  EXPECT_EQ(r.identity.job_id, "777");
  EXPECT_EQ(r.identity.job_id_source, "SLURM_JOB_ID");
  EXPECT_EQ(r.identity.node, "gpu07");
  EXPECT_EQ(r.identity.hostname, "host-a");
  EXPECT_TRUE(r.problems.empty());
}

TEST(LauncherIdentity, OpenMpiThenTorchrun) {
  auto r = resolve({{"OMPI_COMM_WORLD_RANK", "3"},
                    {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                    {"RANK", "3"},
                    {"WORLD_SIZE", "4"}});
  EXPECT_EQ(r.identity.rank_source, "openmpi");
  auto t = resolve(
      {{"RANK", "2"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "2"}, {"TORCHELASTIC_RUN_ID", "abc"}});
  EXPECT_EQ(t.identity.rank_source, "torchrun");
  EXPECT_EQ(t.identity.rank, 2);
  EXPECT_EQ(t.identity.local_rank, 2);
  EXPECT_EQ(t.identity.job_id, "abc");
  EXPECT_EQ(t.identity.node, "host-a") << "hostname when no SLURMD_NODENAME";
}

TEST(LauncherIdentity, NestedLauncherWithAnotherWorldSizeWins) {
  // srun starts one torchrun per node: SLURM_* describe the torchrun tasks.
  auto r = resolve({{"SLURM_PROCID", "1"},
                    {"SLURM_NTASKS", "2"},
                    {"SLURM_JOB_ID", "9"},
                    {"RANK", "13"},
                    {"WORLD_SIZE", "16"},
                    {"LOCAL_RANK", "5"}});
  EXPECT_EQ(r.identity.rank_source, "torchrun");
  EXPECT_EQ(r.identity.rank, 13);
  EXPECT_EQ(r.identity.world_size, 16);
  EXPECT_EQ(r.identity.job_id, "9") << "the job id still comes from Slurm";
}

TEST(LauncherIdentity, MalformedValuesAreReportedAndSkipped) {
  auto r =
      resolve({{"SLURM_PROCID", "x1"}, {"SLURM_NTASKS", "4"}, {"RANK", "1"}, {"WORLD_SIZE", "4"}});
  EXPECT_EQ(r.identity.rank_source, "torchrun");
  EXPECT_EQ(r.identity.rank, 1);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems.front(), "SLURM_PROCID='x1' is not a non-negative integer");

  auto bad = resolve({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_EQ(bad.identity.rank, -1) << "rank must be below world size";
  EXPECT_EQ(bad.identity.rank_source, "none");
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_EQ(bad.problems.front(), "RANK=4 is not below WORLD_SIZE=4");

  auto half = resolve({{"WORLD_SIZE", "4"}});
  EXPECT_EQ(half.identity.rank, -1);
  ASSERT_EQ(half.problems.size(), 1u);
  EXPECT_EQ(half.problems.front(), "WORLD_SIZE is set but RANK is not (set both or neither)");

  auto empty = resolve({{"RANK", ""}, {"WORLD_SIZE", ""}, {"SLURM_JOB_ID", ""}});
  EXPECT_TRUE(empty.problems.empty()) << "empty values count as unset";
  EXPECT_EQ(empty.identity.job_id, "");
}

TEST(LauncherIdentity, OverridesAndFallbacks) {
  auto r = resolve({{"SLURM_JOB_ID", "42"}, {"SLURMD_NODENAME", "n1"}}, "myjob", "container-node");
  EXPECT_EQ(r.identity.job_id, "myjob");
  EXPECT_EQ(r.identity.node, "container-node");
  EXPECT_EQ(r.identity.rank, -1);
  EXPECT_EQ(r.identity.job_id_source, "RINGSIDE_JOB_ID");
  EXPECT_EQ(r.identity.step_id, "") << "a step only belongs to a Slurm job id";
  auto none = resolve({});
  EXPECT_EQ(none.identity.job_id, "");
  EXPECT_EQ(none.identity.job_id_source, "");
  EXPECT_TRUE(none.problems.empty());
  auto step = resolve({{"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "3"}});
  EXPECT_EQ(step.identity.step_id, "3");
  EXPECT_TRUE(step.problems.empty());
}

// The step id goes into file names: anything but a step number is named and not used.
TEST(LauncherIdentity, MalformedStepIdIsAProblemAndNotUsed) {
  for (const char* bad : {"x1", "-1", "4294967296", "1.5", "../0"}) {
    auto r = resolve({{"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", bad}});
    EXPECT_EQ(r.identity.step_id, "") << bad;
    ASSERT_EQ(r.problems.size(), 1u) << bad;
    EXPECT_NE(r.problems[0].find(std::string("SLURM_STEP_ID='") + bad + "'"), std::string::npos)
        << r.problems[0];
  }
  auto top = resolve({{"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "4294967291"}});
  EXPECT_EQ(top.identity.step_id, "4294967291") << "Slurm's special steps are numbers too";
}

}  // namespace
}  // namespace ringside
