#include "identity.h"

#include "ringside/config_spec.h"

namespace ringside::probe {

namespace {

struct Source {
  const char* name;
  const char* rank_var;
  const char* size_var;
  const char* local_var;
};

// The documented order.  A later source replaces an earlier one only when it
// disagrees on the world size: that means a launcher nested inside another
// (torchrun or mpirun inside a Slurm allocation), and the innermost launcher
// is the one that knows this process's place.
constexpr Source kSources[] = {
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

// Job id candidates in the same launcher order.
constexpr const char* kJobVars[] = {"SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
                                    "TORCHELASTIC_RUN_ID"};

bool read_int(const EnvLookup& env, const char* var, int64_t& out,
              std::vector<std::string>& warnings) {
  const char* text = env(var);
  if (text == nullptr) return false;
  auto parsed = config::parse_int(text);
  if (!parsed.ok() || *parsed < 0) {
    warnings.push_back(std::string(var) + "='" + text +
                       "' is not a non-negative integer; ignoring this launcher's variables");
    return false;
  }
  out = *parsed;
  return true;
}

}  // namespace

IdentityResult resolve_identity(const EnvLookup& env, const std::string& job_override,
                                const std::string& node_override, const std::string& hostname) {
  IdentityResult result;
  Identity& id = result.identity;
  bool chosen = false;
  for (const Source& src : kSources) {
    int64_t rank = -1;
    int64_t size = -1;
    if (env(src.rank_var) == nullptr || env(src.size_var) == nullptr) continue;
    if (!read_int(env, src.rank_var, rank, result.warnings) ||
        !read_int(env, src.size_var, size, result.warnings)) {
      continue;
    }
    if (rank >= size) {
      result.warnings.push_back(std::string(src.rank_var) + "=" + std::to_string(rank) +
                                " is not below " + src.size_var + "=" + std::to_string(size) +
                                "; ignoring this launcher's variables");
      continue;
    }
    if (chosen && size == id.world_size) continue;  // same job seen through another launcher
    int64_t local = -1;
    if (!read_int(env, src.local_var, local, result.warnings)) local = -1;
    id.rank = rank;
    id.world_size = size;
    id.local_rank = local;
    id.rank_source = src.name;
    chosen = true;
  }

  if (!job_override.empty()) {
    id.job_id = job_override;
  } else {
    for (const char* var : kJobVars) {
      const char* v = env(var);
      if (v != nullptr && *v != '\0') {
        id.job_id = v;
        break;
      }
    }
  }
  if (id.job_id.empty()) {
    id.job_id = "local";
    result.warnings.push_back(
        "no job id (RINGSIDE_JOB_ID, SLURM_JOB_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE or "
        "TORCHELASTIC_RUN_ID); using 'local', so a later run into the same directory overwrites "
        "these traces");
  }

  id.hostname = hostname;
  if (!node_override.empty()) {
    id.node = node_override;
  } else if (const char* n = env("SLURMD_NODENAME"); n != nullptr && *n != '\0') {
    id.node = n;
  } else {
    id.node = hostname;
  }
  return result;
}

}  // namespace ringside::probe
