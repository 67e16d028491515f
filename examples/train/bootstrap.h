// Who this process is (rank, world, local rank) and how it joins the job:
// through MPI under mpirun, or through the environment (Slurm or a
// torchrun-style launcher such as simrun) plus NCCL_COMM_ID.
#pragma once

#include <nccl.h>

#include <string>

namespace ringside::examples {

enum class Launcher { kMpi, kTorchrunEnv, kSlurm, kSingle };

struct Identity {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  Launcher launcher = Launcher::kSingle;
  std::string host;
};

// Reads the launcher's environment; calls MPI_Init under mpirun. Throws
// UsageError for an incomplete or malformed environment.
Identity detect_identity();

// Selects this rank's GPU (local rank % device count) and returns its index.
int select_device(const Identity& id);

// The world communicator: rank 0's unique id is broadcast with MPI under
// mpirun; otherwise every rank calls ncclGetUniqueId, which NCCL_COMM_ID makes
// identical everywhere.
ncclComm_t init_world_comm(const Identity& id);

// This rank's place in one tensor/data/pipeline-parallel group.
struct GroupMembership {
  int color = 0;   // the same on every member, different for every group of this kind
  int index = 0;   // rank within the group; index 0 is the group's first member
  int size = 1;    // members
  int leader = 0;  // global rank of index 0
};

// A group's communicator made the way PyTorch's new_group makes it: the
// group's first member calls ncclGetUniqueId, the id reaches the other members
// (MPI_Comm_split + MPI_Bcast under mpirun; otherwise an all-gather of every
// group leader's id on `world`, standing in for PyTorch's store), and every
// member calls ncclCommInitRank. Collective over the world: every rank calls it
// for each kind of group, in the same order.
ncclComm_t init_group_comm(const Identity& id, ncclComm_t world, const GroupMembership& group);

// MPI_Finalize when MPI was initialised (no-op otherwise).
void finalize_launcher(const Identity& id);

const char* to_string(Launcher launcher);

}  // namespace ringside::examples
