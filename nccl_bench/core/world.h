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
#include <string_view>
#include <vector>

#include "core/identity.h"
#include "core/rendezvous.h"
#include "core/watchdog.h"
#include "core/world_types.h"

namespace ringside::bench {

struct WorldOptions {
  Launcher launcher = Launcher::kAuto;
  RendezvousOptions rendezvous;
  int gpus_per_process = 1;    // every thread's GPUs
  int threads = 1;             // -t: the process's GPUs are `threads` blocks
  bool parallel_init = false;  // -p: each block's communicators created by a thread of its own
  double timeout_seconds = kDefaultTimeoutSeconds;  // -T: bound of every wait, 0 = none
};

class World {
 public:
  // Detects the identity, agrees on the id, creates the communicators.
  World(const WorldOptions& options, int* argc, char*** argv);
  // Destroys the communicators (aborts them after a failure) and finalizes MPI
  // unless a communicator failed (MPI_Finalize could wait for a dead peer).
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
  // Every wait on the world's (and validate's) communicators goes through it.
  Watchdog& watchdog() { return watchdog_; }

 private:
  Watchdog watchdog_;
  ProcessIdentity id_;
  int nranks_ = 1;
  uint64_t comm_id_ = 0;
  std::string job_id_;
  std::vector<LocalRank> locals_;
  std::vector<RankInfo> infos_;
};

// Out-of-band collectives on a set of communicators, one entry per local rank;
// every member rank of the communicators must call them.  Not timed; they
// allocate and free small device buffers and wait through `wd`; `context`
// says what they are for in a failure message.
//
// Element-wise reduction of `values[i]` (one vector per local rank, equal lengths).
std::vector<std::vector<double>> oob_allreduce(Watchdog& wd, std::span<const CommStream> cs,
                                               const std::vector<std::vector<double>>& values,
                                               ncclRedOp_t op, std::string_view context = {});
// Concatenation over all ranks (rank order) of `block_bytes` from each local rank.
std::vector<std::byte> oob_allgather(Watchdog& wd, std::span<const CommStream> cs,
                                     const std::vector<std::vector<std::byte>>& blocks,
                                     std::string_view context = {});
void oob_barrier(Watchdog& wd, std::span<const CommStream> cs, std::string_view context = {});

RankInfo describe_local_rank(const ProcessIdentity& id, const LocalRank& local);

}  // namespace ringside::bench
