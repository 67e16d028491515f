#include "core/identity.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "core/errors.h"
#include "ringside/config_spec.h"

namespace ringside::bench {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int env_int(const char* name, int min_value) {
  const char* v = env(name);
  auto parsed = config::parse_int(v);
  if (!parsed.ok() || *parsed < min_value || *parsed > (1 << 30)) {
    throw UsageError(std::string("environment variable ") + name + "='" + v +
                     "' is not an integer >= " + std::to_string(min_value) +
                     "; unset it or fix the launcher");
  }
  return static_cast<int>(*parsed);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

struct EnvTriple {
  const char* rank;
  const char* size;
  const char* local;
  const char* source;
};

constexpr EnvTriple kEnvSources[] = {
    {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "slurm"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "openmpi"},
    {"RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun"},
};

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw RuntimeError(std::string(call) + " failed: " + text + ", " + error_context());
  }
}

void identity_from_mpi(ProcessIdentity& id, int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) check_mpi(MPI_Init(argc, argv), "MPI_Init");
  id.mpi = true;
  id.source = "mpi";
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &id.proc), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &id.nprocs), "MPI_Comm_size");
  MPI_Comm local;
  check_mpi(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, id.proc, MPI_INFO_NULL, &local),
      "MPI_Comm_split_type");
  check_mpi(MPI_Comm_rank(local, &id.local_proc), "MPI_Comm_rank(local)");
  MPI_Comm_free(&local);
}

void identity_from_env(ProcessIdentity& id) {
  for (const EnvTriple& s : kEnvSources) {
    if (env(s.rank) == nullptr) continue;
    if (env(s.size) == nullptr) {
      throw UsageError(std::string(s.rank) + " is set but " + s.size +
                       " is not; set both (or neither) so every process knows the job size");
    }
    id.proc = env_int(s.rank, 0);
    id.nprocs = env_int(s.size, 1);
    id.local_proc = env(s.local) ? env_int(s.local, 0) : 0;
    id.source = s.source;
    if (id.proc >= id.nprocs) {
      throw UsageError(std::string(s.rank) + "=" + std::to_string(id.proc) + " is not below " +
                       s.size + "=" + std::to_string(id.nprocs));
    }
    return;
  }
  id.source = "none";
}

}  // namespace

ProcessIdentity detect_identity(Launcher launcher, int* argc, char*** argv) {
  ProcessIdentity id;
  id.hostname = host_name();
  if (const char* n = env("RINGSIDE_NODE_NAME")) {
    id.node = n;
  } else if (const char* s = env("SLURMD_NODENAME")) {
    id.node = s;
  } else {
    id.node = id.hostname;
  }
  if (const char* j = env("SLURM_JOB_ID")) {
    id.job_id = j;
    id.job_key = j;
    if (const char* step = env("SLURM_STEP_ID")) id.job_key += std::string(".") + step;
  } else if (const char* r = env("RINGSIDE_JOB_ID")) {
    id.job_id = r;
    id.job_key = r;
  }
  bool use_mpi = launcher == Launcher::kMpi;
  if (launcher == Launcher::kAuto) {
    use_mpi = env("OMPI_COMM_WORLD_SIZE") != nullptr || env("PMIX_RANK") != nullptr;
  }
  if (use_mpi) {
    identity_from_mpi(id, argc, argv);
  } else {
    identity_from_env(id);
  }
  set_error_context(id.hostname, id.proc);
  return id;
}

void finalize_identity(ProcessIdentity& id) {
  if (!id.mpi) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  id.mpi = false;
}

void mpi_broadcast(const ProcessIdentity& id, void* bytes, int size) {
  if (!id.mpi) return;
  check_mpi(MPI_Bcast(bytes, size, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

}  // namespace ringside::bench
