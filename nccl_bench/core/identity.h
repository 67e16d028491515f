// Who this process is: rank, size and local rank from MPI or from the launcher's
// environment (Slurm, Open MPI, torchrun-style), and the node name.
#pragma once

#include <string>

namespace ringside::bench {

enum class Launcher { kAuto, kMpi, kEnv };

struct ProcessIdentity {
  int proc = 0;        // process index in the job
  int nprocs = 1;      // number of processes
  int local_proc = 0;  // index among the processes of this node
  bool mpi = false;    // MPI_Init was called (MPI_Finalize at exit)
  std::string source;  // mpi, slurm, openmpi, torchrun or none
  std::string node;    // RINGSIDE_NODE_NAME, SLURMD_NODENAME or the hostname
  std::string hostname;
  std::string job_key;  // job_id, plus ".SLURM_STEP_ID" for a Slurm job id
  std::string job_id;   // as in the probe (RINGSIDE_JOB_ID, SLURM_JOB_ID, ...), "" if none
  std::string step_id;  // SLURM_STEP_ID for a Slurm job id, else ""
};

// Launcher::kAuto uses MPI when the process was started by mpirun or by srun with
// PMIx (OMPI_COMM_WORLD_SIZE or PMIX_RANK set), else the environment
// (ringside/launcher_identity.h).  Throws UsageError for malformed launcher
// variables (naming them).
ProcessIdentity detect_identity(Launcher launcher, int* argc, char*** argv);

// MPI_Finalize when MPI was initialised; safe to call more than once.
void finalize_identity(ProcessIdentity& id);

// Broadcasts `bytes` from process 0 over MPI (only when id.mpi).
void mpi_broadcast(const ProcessIdentity& id, void* bytes, int size);

}  // namespace ringside::bench
