// The context one operation runs in on a stream worker: tagged sends and receives
// to the communicator's peers, the latest peer arrival seen (for pacing), and the
// failure paths (peer gone, abort, desync) as an exception that unwinds the
// algorithm back to the executor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "comm.h"
#include "op.h"

namespace ringside::sim::nccl {

// Ends the current op early; `code` becomes the comm's asynchronous error when it is one.
struct OpFailed {
  ncclResult_t code;
};

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class OpRun {
 public:
  OpRun(Comm& comm, const OpDesc& op, MsgKind kind);

  Comm& comm() { return comm_; }
  const OpDesc& op() const { return op_; }
  int rank() const { return comm_.rank; }
  int nranks() const { return comm_.nranks; }
  int64_t ready_ns() const { return ready_ns_; }
  void note_ready(int64_t t) {
    if (t > ready_ns_) ready_ns_ = t;
  }

  // Sends `len` bytes to `peer` tagged with this op's seq and `step` (kind as constructed).
  void send(int peer, uint32_t step, const void* data, size_t len);
  void send_kind(MsgKind kind, int peer, uint32_t step, const void* data, size_t len);
  // Receives the message of `step` from `peer`; checks that its op matches ours.
  Message recv(int peer, uint32_t step, size_t expected_len);
  Message recv_kind(MsgKind kind, int peer, uint32_t step, size_t expected_len);

 private:
  [[noreturn]] void block_on_desync(int peer, const OpSignature& theirs);

  Comm& comm_;
  const OpDesc& op_;
  OpSignature sig_;
  MsgKind kind_;
  int64_t ready_ns_;
};

}  // namespace ringside::sim::nccl
