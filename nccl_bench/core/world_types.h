// Plain types of the benchmark's world, shared by the world (world.h) and the
// watchdog that waits on it (watchdog.h).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>

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

}  // namespace ringside::bench
