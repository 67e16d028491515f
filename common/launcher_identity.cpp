#include "ringside/launcher_identity.h"

#include <cstdlib>

#include "ringside/config_spec.h"

namespace ringside {

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

const char* lookup(const EnvLookup& env, const char* var) {
  const char* v = env(var);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool read_int(const EnvLookup& env, const char* var, int64_t& out,
              std::vector<std::string>& problems) {
  const char* text = lookup(env, var);
  if (text == nullptr) return false;
  auto parsed = config::parse_int(text);
  if (!parsed.ok() || *parsed < 0 || *parsed > (int64_t{1} << 30)) {
    problems.push_back(std::string(var) + "='" + config::echo(text) +
                       "' is not a non-negative integer");
    return false;
  }
  out = *parsed;
  return true;
}

}  // namespace

const char* process_env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

const char* launcher_job_id_variables() {
  return "RINGSIDE_JOB_ID, SLURM_JOB_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE or "
         "TORCHELASTIC_RUN_ID";
}

LauncherIdentityResult resolve_launcher_identity(const EnvLookup& env,
                                                 const std::string& job_override,
                                                 const std::string& node_override,
                                                 const std::string& hostname) {
  LauncherIdentityResult result;
  LauncherIdentity& id = result.identity;
  bool chosen = false;
  for (const Source& src : kSources) {
    const bool has_rank = lookup(env, src.rank_var) != nullptr;
    const bool has_size = lookup(env, src.size_var) != nullptr;
    if (!has_rank && !has_size) continue;
    if (has_rank != has_size) {
      result.problems.push_back(std::string(has_rank ? src.rank_var : src.size_var) +
                                " is set but " + (has_rank ? src.size_var : src.rank_var) +
                                " is not (set both or neither)");
      continue;
    }
    int64_t rank = -1;
    int64_t size = -1;
    if (!read_int(env, src.rank_var, rank, result.problems) ||
        !read_int(env, src.size_var, size, result.problems)) {
      continue;
    }
    if (rank >= size) {
      result.problems.push_back(std::string(src.rank_var) + "=" + std::to_string(rank) +
                                " is not below " + src.size_var + "=" + std::to_string(size));
      continue;
    }
    if (chosen && size == id.world_size) continue;  // same job seen through another launcher
    int64_t local = -1;
    if (!read_int(env, src.local_var, local, result.problems)) local = -1;
    id.rank = rank;
    id.world_size = size;
    id.local_rank = local;
    id.rank_source = src.name;
    chosen = true;
  }

  if (!job_override.empty()) {
    id.job_id = job_override;
    id.job_id_source = "RINGSIDE_JOB_ID";
  } else {
    for (const char* var : kJobVars) {
      if (const char* v = lookup(env, var)) {
        id.job_id = v;
        id.job_id_source = var;
        break;
      }
    }
  }
  if (id.job_id_source == "SLURM_JOB_ID") {
    if (const char* step = lookup(env, "SLURM_STEP_ID")) {
      // Slurm's step ids are 32-bit unsigned numbers (special steps near the top).
      auto parsed = config::parse_int(step);
      if (parsed.ok() && *parsed >= 0 && *parsed <= int64_t{0xFFFFFFFF}) {
        id.step_id = std::to_string(*parsed);
      } else {
        result.problems.push_back(std::string("SLURM_STEP_ID='") + config::echo(step) +
                                  "' is not a Slurm step number (0..4294967295)");
      }
    }
  }

  id.hostname = hostname;
  if (!node_override.empty()) {
    id.node = node_override;
  } else if (const char* n = lookup(env, "SLURMD_NODENAME")) {
    id.node = n;
  } else {
    id.node = hostname;
  }
  return result;
}

}  // namespace ringside
