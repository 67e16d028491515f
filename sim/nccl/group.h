// Issuing ops: sequence numbers, the stop/stall/crash faults, and ncclGroupStart/End
// (ops of a group are held per thread and launched together at the outermost
// ncclGroupEnd, one task per (communicator, stream); inits inside a group run
// concurrently and are joined there).
#pragma once

#include <nccl.h>

#include <memory>

#include "comm.h"
#include "op.h"

namespace ringside::sim::nccl {

// Validated op from an API call: numbered, checked against faults, then enqueued
// now or held by the current group.
ncclResult_t issue_op(const std::shared_ptr<Comm>& comm, OpDesc op, cudaStream_t stream);
// Gives an op its index and sequence number on the communicator (at issue, and again at
// each launch of a CUDA graph that captured it).
void number_op(Comm& comm, OpDesc& op);

ncclResult_t group_start();
ncclResult_t group_end();
bool in_group();
// A communicator whose init was started inside a group (joined at ncclGroupEnd).
void group_add_init(const std::shared_ptr<Comm>& comm);

// The `stop` fault: the calling thread never returns (the rank stops issuing ops).
[[noreturn]] void stop_forever(const Comm& comm, int64_t next_op);

}  // namespace ringside::sim::nccl
