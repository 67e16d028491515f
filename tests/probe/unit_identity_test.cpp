// The probe's lenient use of the shared launcher identity: problems become
// warnings and a missing job id becomes 'local'.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "identity.h"

namespace ringside::probe {
namespace {

IdentityResult resolve(const std::map<std::string, std::string>& env) {
  return resolve_identity(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      "", "", "host-a");
}

TEST(Identity, ProblemsAreWarningsAndTheJobRunsOn) {
  auto r = resolve({{"RANK", "abc"}, {"WORLD_SIZE", "4"}, {"SLURM_JOB_ID", "7"}});
  EXPECT_EQ(r.identity.rank, -1) << "the first communicator will say";
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings.front(),
            "RANK='abc' is not a non-negative integer; ignoring this launcher's variables");
  EXPECT_EQ(r.identity.job_id, "7");
}

TEST(Identity, BadStepIdLosesOnlyTheStep) {
  auto r = resolve({{"SLURM_PROCID", "1"},
                    {"SLURM_NTASKS", "4"},
                    {"SLURM_JOB_ID", "7"},
                    {"SLURM_STEP_ID", "1;x"}});
  EXPECT_EQ(r.identity.rank, 1);
  EXPECT_EQ(r.identity.step_id, "");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings.front(),
            "SLURM_STEP_ID='1;x' is not a Slurm step number (0..4294967295); the trace is named "
            "without a step");
}

TEST(Identity, MissingJobIdIsLocalWithAWarning) {
  auto none = resolve({});
  EXPECT_EQ(none.identity.job_id, "local");
  ASSERT_EQ(none.warnings.size(), 1u);
  EXPECT_NE(none.warnings.front().find("TORCHELASTIC_RUN_ID"), std::string::npos);
}

}  // namespace
}  // namespace ringside::probe
