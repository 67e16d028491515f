#include "rank_layout.h"

#include <unistd.h>

#include <ctime>
#include <stdexcept>
#include <string_view>

namespace ringside::sim {

std::vector<RankPlacement> place_ranks(int ranks, int nodes) {
  if (ranks < 1 || nodes < 1 || nodes > ranks) {
    throw std::invalid_argument("place_ranks: need 1 <= nodes <= ranks (got " +
                                std::to_string(nodes) + " nodes for " + std::to_string(ranks) +
                                " ranks)");
  }
  const int base = ranks / nodes;
  const int extra = ranks % nodes;
  std::vector<RankPlacement> out;
  out.reserve(ranks);
  int rank = 0;
  for (int node = 0; node < nodes; ++node) {
    const int on_node = base + (node < extra ? 1 : 0);
    for (int local = 0; local < on_node; ++local) {
      RankPlacement p;
      p.rank = rank++;
      p.local_rank = local;
      p.node_index = node;
      p.local_world_size = on_node;
      p.node_name = "node" + std::to_string(node + 1);
      out.push_back(std::move(p));
    }
  }
  return out;
}

EnvOverrides rank_env(const RankPlacement& placement, const JobEnv& job) {
  EnvOverrides env = {
      {"RANK", std::to_string(placement.rank)},
      {"LOCAL_RANK", std::to_string(placement.local_rank)},
      {"WORLD_SIZE", std::to_string(job.world_size)},
      {"LOCAL_WORLD_SIZE", std::to_string(placement.local_world_size)},
      {"NCCL_COMM_ID", job.comm_id},
      {"RINGSIM_NODE", placement.node_name},
      {"RINGSIDE_NODE_NAME", placement.node_name},
      {"RINGSIDE_JOB_ID", job.job_id},
  };
  if (!job.cluster_file.empty()) env.emplace_back("RINGSIM_CLUSTER", job.cluster_file);
  return env;
}

std::vector<std::string> merge_env(char** base, const EnvOverrides& overrides) {
  std::vector<std::string> out;
  for (char** e = base; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    const std::string_view name = entry.substr(0, eq);
    bool replaced = false;
    for (const auto& [key, value] : overrides) {
      if (name == key) {
        replaced = true;
        break;
      }
    }
    if (!replaced) out.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) out.push_back(key + "=" + value);
  return out;
}

std::string make_job_id(const char* inherited) {
  if (inherited != nullptr && *inherited != '\0') return inherited;
  return "simrun-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
}

}  // namespace ringside::sim
