// Who a process is in its job, from the launcher's environment: rank, world
// size and local rank (Slurm, Open MPI, torchrun-style), job id and node name.
// Shared by the probe (which warns and carries on) and nccl_bench (which
// refuses malformed values).  The order and the nested-launcher rule are in
// docs/probe.md, "Identity".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ringside {

struct LauncherIdentity {
  int64_t rank = -1;  // -1: no usable launcher variables
  int64_t local_rank = -1;
  int64_t world_size = -1;
  std::string rank_source = "none";  // slurm, openmpi, torchrun or none
  std::string job_id;                // "" when nothing names the job
  std::string job_id_source;         // the variable the job id came from, "" if none
  std::string step_id;               // SLURM_STEP_ID (a number) when the job id is Slurm's, else ""
  std::string node;                  // node override, SLURMD_NODENAME or the hostname
  std::string hostname;
};

// The value of an environment variable, or nullptr when unset.  An empty
// value counts as unset.
using EnvLookup = std::function<const char*(const char*)>;

// This process's environment as an EnvLookup: getenv, with an empty value as unset.
const char* process_env(const char* name);

struct LauncherIdentityResult {
  LauncherIdentity identity;
  // Launcher variables that were present but unusable, each naming the
  // variable and its value (e.g. "SLURM_PROCID='x1' is not a non-negative
  // integer"); that launcher's variables were ignored, or for SLURM_STEP_ID
  // only the step.
  std::vector<std::string> problems;
};

// `job_override` / `node_override`: RINGSIDE_JOB_ID / RINGSIDE_NODE_NAME
// (empty when unset); `hostname`: gethostname().
LauncherIdentityResult resolve_launcher_identity(const EnvLookup& env,
                                                 const std::string& job_override,
                                                 const std::string& node_override,
                                                 const std::string& hostname);

// The job id variables in the order they are tried, for messages.
const char* launcher_job_id_variables();

}  // namespace ringside
