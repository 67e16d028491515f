// Where each simrun rank lives (node, local rank) and the environment it gets.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringside::sim {

struct RankPlacement {
  int rank = 0;
  int local_rank = 0;
  int node_index = 0;  // 0-based; the node is named node<node_index + 1>
  int local_world_size = 0;
  std::string node_name;
};

// Splits `ranks` over `nodes` in contiguous blocks, like Slurm's block
// distribution: every node gets ranks / nodes ranks and the first ranks % nodes
// nodes one more. Requires 1 <= nodes <= ranks.
std::vector<RankPlacement> place_ranks(int ranks, int nodes);

// What every rank of one job shares.
struct JobEnv {
  int world_size = 0;
  std::string comm_id;       // NCCL_COMM_ID value, host:port
  std::string job_id;        // RINGSIDE_JOB_ID value
  std::string cluster_file;  // RINGSIM_CLUSTER value; empty = inherit the caller's
};

using EnvOverrides = std::vector<std::pair<std::string, std::string>>;

// The variables simrun sets for one rank (name, value).
EnvOverrides rank_env(const RankPlacement& placement, const JobEnv& job);

// `base` (a NULL-terminated environ array) with `overrides` replacing or adding
// entries, as "NAME=value" strings.
std::vector<std::string> merge_env(char** base, const EnvOverrides& overrides);

// A job id for RINGSIDE_JOB_ID: the caller's if set, else "simrun-<pid>-<time>".
std::string make_job_id(const char* inherited);

}  // namespace ringside::sim
