// The benchmark's world: one NCCL communicator per local GPU over all ranks, plus
// out-of-band helpers (barrier, allreduce, allgather of small host data).  The
// helpers run over NCCL itself so that the MPI and the non-MPI launch share one
// code path after the unique id is agreed.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/identity.h"
#include "core/rendezvous.h"

namespace ringside::bench {

struct CommStream {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
};

// One GPU of this process.
struct LocalRank {
  int rank = 0;        // rank in the world communicator
  int local_rank = 0;  // rank among the GPUs of this node
  CommStream cs;
};

// Fixed-size description of a rank, exchanged with allgather.
struct RankInfo {
  int32_t rank = 0;
  int32_t local_rank = 0;
  int32_t pid = 0;
  int32_t device = 0;
  char hostname[64] = {};
  char node[64] = {};
  char bus_id[32] = {};
  char gpu_name[96] = {};
  char gpu_uuid[48] = {};
};

struct WorldOptions {
  Launcher launcher = Launcher::kAuto;
  RendezvousOptions rendezvous;
  int gpus_per_process = 1;
};

class World {
 public:
  // Detects the identity, agrees on the id, creates the communicators.
  World(const WorldOptions& options, int* argc, char*** argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const ProcessIdentity& identity() const { return id_; }
  int nranks() const { return nranks_; }
  std::vector<LocalRank>& locals() { return locals_; }
  // The communicators and streams of local ranks first .. first+count-1 (all by default).
  std::vector<CommStream> comm_streams(size_t first = 0, size_t count = SIZE_MAX) const;
  uint64_t comm_id() const { return comm_id_; }
  // The launcher job id (ringside/launcher_identity.h), or derived from the unique id.
  const std::string& job_id() const { return job_id_; }
  // Every rank's description, in rank order (collective: all ranks call it).
  const std::vector<RankInfo>& rank_infos() const { return infos_; }
  bool is_root_process() const { return id_.proc == 0; }

 private:
  ProcessIdentity id_;
  int nranks_ = 1;
  uint64_t comm_id_ = 0;
  std::string job_id_;
  std::vector<LocalRank> locals_;
  std::vector<RankInfo> infos_;
};

// Out-of-band collectives on a set of communicators, one entry per local rank;
// every member rank of the communicators must call them.  Not timed; they
// allocate and free small device buffers.
//
// Element-wise reduction of `values[i]` (one vector per local rank, equal lengths).
std::vector<std::vector<double>> oob_allreduce(std::span<const CommStream> cs,
                                               const std::vector<std::vector<double>>& values,
                                               ncclRedOp_t op);
// Concatenation over all ranks (rank order) of `block_bytes` from each local rank.
std::vector<std::byte> oob_allgather(std::span<const CommStream> cs,
                                     const std::vector<std::vector<std::byte>>& blocks);
void oob_barrier(std::span<const CommStream> cs);

RankInfo describe_local_rank(const ProcessIdentity& id, const LocalRank& local);

}  // namespace ringside::bench
