#include "core/identity.h"

#include <mpi.h>
#include <unistd.h>

#include <string_view>
#include <vector>

#include "core/errors.h"
#include "ringside/launcher_identity.h"

namespace ringside::bench {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

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

// Slurm, Open MPI or torchrun-style variables, through the shared resolution;
// a benchmark refuses what it cannot trust.
void identity_from_env(ProcessIdentity& id, const LauncherIdentity& found,
                       const std::vector<std::string>& problems) {
  if (!problems.empty()) throw UsageError(problems.front() + "; fix the launcher or unset it");
  if (found.rank < 0) {
    id.source = "none";
    return;
  }
  id.proc = static_cast<int>(found.rank);
  id.nprocs = static_cast<int>(found.world_size);
  id.local_proc = found.local_rank >= 0 ? static_cast<int>(found.local_rank) : 0;
  id.source = found.rank_source;
}

}  // namespace

ProcessIdentity detect_identity(Launcher launcher, int* argc, char*** argv) {
  ProcessIdentity id;
  id.hostname = host_name();
  const char* job = process_env("RINGSIDE_JOB_ID");
  const char* node = process_env("RINGSIDE_NODE_NAME");
  const LauncherIdentityResult found =
      resolve_launcher_identity(process_env, job ? job : "", node ? node : "", id.hostname);
  id.node = found.identity.node;
  id.job_id = found.identity.job_id;
  id.step_id = found.identity.step_id;
  id.job_key = id.job_id;
  if (!id.step_id.empty()) id.job_key += "." + id.step_id;
  bool use_mpi = launcher == Launcher::kMpi;
  if (launcher == Launcher::kAuto) {
    use_mpi = process_env("OMPI_COMM_WORLD_SIZE") != nullptr || process_env("PMIX_RANK") != nullptr;
  }
  if (use_mpi) {
    identity_from_mpi(id, argc, argv);
  } else {
    identity_from_env(id, found.identity, found.problems);
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
