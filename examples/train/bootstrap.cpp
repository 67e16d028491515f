#include "bootstrap.h"

#include <mpi.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "checks.h"

namespace ringside::examples {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

// The whole value must be a non-negative integer.
int env_int(const char* name) {
  const char* text = env(name);
  if (text == nullptr) throw UsageError(std::string(name) + " is not set");
  int value = -1;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value < 0) {
    throw UsageError(std::string(name) + "='" + text + "' is not a non-negative integer");
  }
  return value;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// RANK/WORLD_SIZE/LOCAL_RANK or SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID.
Identity identity_from_env(Launcher launcher, const char* rank_var, const char* size_var,
                           const char* local_var) {
  Identity id;
  id.launcher = launcher;
  id.rank = env_int(rank_var);
  id.world_size = env_int(size_var);
  id.local_rank = env(local_var) != nullptr ? env_int(local_var) : id.rank;
  if (id.world_size < 1 || id.rank >= id.world_size) {
    throw UsageError(std::string(rank_var) + "=" + std::to_string(id.rank) + " is not below " +
                     size_var + "=" + std::to_string(id.world_size));
  }
  return id;
}

// A fresh id with its own bootstrap root. NCCL_COMM_ID pins every id to the
// world's root address, so it is hidden for this call and then restored.
ncclUniqueId fresh_unique_id() {
  ncclUniqueId unique_id;
  std::memset(&unique_id, 0, sizeof(unique_id));
  const char* pinned = env("NCCL_COMM_ID");
  const std::string saved = pinned != nullptr ? pinned : "";
  if (pinned != nullptr) unsetenv("NCCL_COMM_ID");
  const ncclResult_t result = ncclGetUniqueId(&unique_id);
  if (pinned != nullptr) setenv("NCCL_COMM_ID", saved.c_str(), 1);
  RINGSIDE_NCCL_CHECK(result);
  return unique_id;
}

ncclUniqueId share_over_mpi(const GroupMembership& group) {
  MPI_Comm members = MPI_COMM_NULL;
  RINGSIDE_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, group.color, group.index, &members));
  ncclUniqueId unique_id;
  std::memset(&unique_id, 0, sizeof(unique_id));
  if (group.index == 0) unique_id = fresh_unique_id();
  RINGSIDE_MPI_CHECK(MPI_Bcast(&unique_id, sizeof(unique_id), MPI_BYTE, 0, members));
  RINGSIDE_MPI_CHECK(MPI_Comm_free(&members));
  return unique_id;
}

// Every rank contributes its group's id if it leads the group, zeros otherwise.
ncclUniqueId share_over_world(const Identity& id, ncclComm_t world, const GroupMembership& group) {
  constexpr size_t kIdBytes = sizeof(ncclUniqueId);
  const auto ranks = static_cast<size_t>(id.world_size);
  std::vector<char> mine(kIdBytes, 0);
  if (group.index == 0) {
    const ncclUniqueId unique_id = fresh_unique_id();
    std::memcpy(mine.data(), &unique_id, kIdBytes);
  }
  cudaStream_t stream = nullptr;
  char* send = nullptr;
  char* recv = nullptr;
  RINGSIDE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  RINGSIDE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&send), kIdBytes));
  RINGSIDE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&recv), kIdBytes * ranks));
  RINGSIDE_CUDA_CHECK(cudaMemcpyAsync(send, mine.data(), kIdBytes, cudaMemcpyHostToDevice, stream));
  RINGSIDE_NCCL_CHECK_COMM(ncclAllGather(send, recv, kIdBytes, ncclUint8, world, stream), world);
  std::vector<char> all(kIdBytes * ranks);
  RINGSIDE_CUDA_CHECK(
      cudaMemcpyAsync(all.data(), recv, all.size(), cudaMemcpyDeviceToHost, stream));
  RINGSIDE_CUDA_CHECK(cudaStreamSynchronize(stream));
  RINGSIDE_CUDA_CHECK(cudaFree(send));
  RINGSIDE_CUDA_CHECK(cudaFree(recv));
  RINGSIDE_CUDA_CHECK(cudaStreamDestroy(stream));
  ncclUniqueId unique_id;
  std::memcpy(&unique_id, all.data() + kIdBytes * static_cast<size_t>(group.leader), kIdBytes);
  return unique_id;
}

}  // namespace

Identity detect_identity() {
  Identity id;
  if (env("OMPI_COMM_WORLD_SIZE") != nullptr) {
    RINGSIDE_MPI_CHECK(MPI_Init(nullptr, nullptr));
    id.launcher = Launcher::kMpi;
    RINGSIDE_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &id.rank));
    RINGSIDE_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &id.world_size));
    id.local_rank =
        env("OMPI_COMM_WORLD_LOCAL_RANK") != nullptr ? env_int("OMPI_COMM_WORLD_LOCAL_RANK") : 0;
  } else if (env("RANK") != nullptr || env("WORLD_SIZE") != nullptr) {
    // A torchrun-style launcher (simrun, torchrun) is more specific than an
    // enclosing Slurm step, so it wins.
    id = identity_from_env(Launcher::kTorchrunEnv, "RANK", "WORLD_SIZE", "LOCAL_RANK");
  } else if (env("SLURM_PROCID") != nullptr) {
    id = identity_from_env(Launcher::kSlurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
  }
  id.host = host_name();
  set_error_context(id.host, id.rank);
  if (id.launcher != Launcher::kMpi && id.world_size > 1 && env("NCCL_COMM_ID") == nullptr) {
    throw UsageError(
        "NCCL_COMM_ID is not set: without MPI every rank needs NCCL_COMM_ID=<host of rank 0>:<free "
        "port> (simrun sets it; under srun export it before the step), or launch with mpirun");
  }
  return id;
}

int select_device(const Identity& id) {
  int count = 0;
  RINGSIDE_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < 1) throw CallError("no CUDA device visible on " + error_context());
  const int device = id.local_rank % count;
  RINGSIDE_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

ncclComm_t init_world_comm(const Identity& id) {
  ncclUniqueId unique_id;
  std::memset(&unique_id, 0, sizeof(unique_id));
  if (id.launcher == Launcher::kMpi) {
    if (id.rank == 0) RINGSIDE_NCCL_CHECK(ncclGetUniqueId(&unique_id));
    RINGSIDE_MPI_CHECK(MPI_Bcast(&unique_id, sizeof(unique_id), MPI_BYTE, 0, MPI_COMM_WORLD));
  } else {
    RINGSIDE_NCCL_CHECK(ncclGetUniqueId(&unique_id));
  }
  ncclComm_t comm = nullptr;
  RINGSIDE_NCCL_CHECK(ncclCommInitRank(&comm, id.world_size, unique_id, id.rank));
  return comm;
}

ncclComm_t init_group_comm(const Identity& id, ncclComm_t world, const GroupMembership& group) {
  const ncclUniqueId unique_id =
      id.launcher == Launcher::kMpi ? share_over_mpi(group) : share_over_world(id, world, group);
  ncclComm_t comm = nullptr;
  RINGSIDE_NCCL_CHECK(ncclCommInitRank(&comm, group.size, unique_id, group.index));
  return comm;
}

void finalize_launcher(const Identity& id) {
  if (id.launcher == Launcher::kMpi) RINGSIDE_MPI_CHECK(MPI_Finalize());
}

const char* to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::kMpi:
      return "mpi";
    case Launcher::kTorchrunEnv:
      return "env (RANK/WORLD_SIZE + NCCL_COMM_ID)";
    case Launcher::kSlurm:
      return "slurm (SLURM_PROCID/SLURM_NTASKS + NCCL_COMM_ID)";
    case Launcher::kSingle:
      return "single process";
  }
  return "?";
}

}  // namespace ringside::examples
