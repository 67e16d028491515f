// The "model": how ranks are arranged into data/tensor/pipeline-parallel
// groups, the communicators for those groups, the buffer sizes, and how much
// work each rank does at each step.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "bootstrap.h"
#include "config.h"

namespace ringside::examples {

// Megatron-style order: tensor-parallel ranks are consecutive (same node),
// then data-parallel, then pipeline stages:
// rank = stage * (dp * tp) + dp_index * tp + tp_index.
struct Layout {
  int world = 1, dp = 1, tp = 1, pp = 1;
  int dp_index = 0, tp_index = 0, stage = 0;

  static Layout make(int rank, int world, int tp, int pp);

  // This rank's tensor-, data- and pipeline-parallel groups.
  GroupMembership tp_group() const;
  GroupMembership dp_group() const;
  GroupMembership pp_group() const;
};

// The groups this rank belongs to; tp/pp are null when their size is 1, dp is
// the world communicator when the job is purely data-parallel.
struct Comms {
  ncclComm_t world = nullptr;
  ncclComm_t dp = nullptr;
  ncclComm_t tp = nullptr;
  ncclComm_t pp = nullptr;

  // Makes the groups from `world` with `init` (a collective call on every
  // rank; the groups are created in the order tp, dp, pp either way).
  static Comms make(ncclComm_t world, const Layout& layout, CommInit init, const Identity& id);
  // Finalizes and destroys the split communicators, then the world one.
  void destroy();
  // After an asynchronous error: aborts every communicator (no further NCCL
  // calls on them), leaving the pointers null.
  void abort();
};

// Element counts (float32) of the buffers.
struct Sizes {
  size_t bucket = 0;      // gradient bucket, a multiple of dp (FSDP shards it)
  size_t shard = 0;       // bucket / dp
  size_t activation = 0;  // pipeline and tensor-parallel messages

  static Sizes make(const TrainConfig& config, const Layout& layout);
};

// Compute time per step for this rank, in milliseconds, before it is split
// into forward (1/3) and backward (2/3) per microbatch.
double step_compute_ms(const TrainConfig& config, const Layout& layout, int rank, int step);

// The rank whose data makes it heavy at `step` under --imbalance data.
int data_heavy_rank(uint64_t seed, int step, int world);

}  // namespace ringside::examples
