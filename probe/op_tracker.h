// The hot path: what every collective, send/recv and group call records.
// No locks, no allocation after warm-up, no I/O, no strings, no getenv.
#pragma once

#include <nccl.h>

#include <cstdint>

#include "ringside/trace_schema.h"

namespace ringside::probe {

struct OpSlot;

struct OpCall {
  trace::OpKind kind;
  ncclComm_t comm;
  cudaStream_t stream;
  const void* sendbuff;
  const void* recvbuff;
  uint64_t count;
  int dtype;
  int redop;  // -1 where not applicable
  int peer;   // root or peer, -1 where not applicable
};

// Records the op as entered (visible to flushes while NCCL runs) and starts
// device timing.  nullptr when nothing was recorded (ring full: a drop).
OpSlot* begin_op(const OpCall& call) noexcept;
// Records the return, ends device timing; `slot` may be nullptr.
void end_op(OpSlot* slot, const OpCall& call, ncclResult_t rc) noexcept;

// Runs `real` between begin_op and end_op; the return code is NCCL's.
template <typename F>
ncclResult_t traced(const OpCall& call, F&& real) {
  OpSlot* slot = begin_op(call);
  const ncclResult_t rc = real();
  end_op(slot, call, rc);
  return rc;
}

// Group bookkeeping around the real calls.
void group_started(ncclResult_t rc) noexcept;
// Called before the real ncclGroupEnd (outermost end: start events for the group's ops).
void group_ending(bool simulated) noexcept;
// Called after it with its return code (end events, or errors / abandonment).
void group_ended(ncclResult_t rc, bool simulated) noexcept;

}  // namespace ringside::probe
