// Runs a communicator's ops on the application's stream: one task per (comm, stream)
// per call or group, executed by the stream's worker thread. Each op moves its data,
// then waits until the cluster model's duration has passed since the last member
// arrived, so every member completes it at about the same modelled time.
#pragma once

#include <nccl.h>

#include <memory>
#include <vector>

#include "comm.h"
#include "op.h"

namespace ringside::sim::nccl {

struct Task {
  std::shared_ptr<Comm> comm;
  std::vector<OpDesc> ops;
  std::vector<bool> stall_before;  // `freeze` (or `stall` of op 0): the device blocks in this op
};

// Enqueues the task on `stream`; the host call returns at once.
ncclResult_t launch_task(std::unique_ptr<Task> task, cudaStream_t stream);

}  // namespace ringside::sim::nccl
