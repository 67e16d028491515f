// Who this process is: rank, local rank, world size, job id and node name,
// from the launcher's environment.  See docs/probe.md, "Identity".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ringside::probe {

struct Identity {
  int64_t rank = -1;  // -1: no launcher variables; the first communicator's rank is used
  int64_t local_rank = -1;
  int64_t world_size = -1;
  std::string rank_source = "none";  // slurm, openmpi, torchrun or none
  std::string job_id;
  std::string node;
  std::string hostname;
};

// Returns the value of an environment variable, or nullptr when unset.
using EnvLookup = std::function<const char*(const char*)>;

struct IdentityResult {
  Identity identity;
  std::vector<std::string> warnings;  // malformed launcher variables, missing job id
};

// `job_override` / `node_override` are RINGSIDE_JOB_ID / RINGSIDE_NODE_NAME
// (empty when unset); `hostname` is gethostname().
IdentityResult resolve_identity(const EnvLookup& env, const std::string& job_override,
                                const std::string& node_override, const std::string& hostname);

}  // namespace ringside::probe
