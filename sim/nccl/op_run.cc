#include "op_run.h"

#include "last_error.h"

namespace ringside::sim::nccl {

OpRun::OpRun(Comm& comm, const OpDesc& op, MsgKind kind)
    : comm_(comm), op_(op), sig_(op.signature()), kind_(kind), ready_ns_(now_ns()) {}

void OpRun::send(int peer, uint32_t step, const void* data, size_t len) {
  send_kind(kind_, peer, step, data, len);
}

void OpRun::send_kind(MsgKind kind, int peer, uint32_t step, const void* data, size_t len) {
  if (!comm_.conns[peer]->send(kind, op_.seq, step, sig_, ready_ns_, data, len))
    throw OpFailed{ncclRemoteError};
}

Message OpRun::recv(int peer, uint32_t step, size_t expected_len) {
  return recv_kind(kind_, peer, step, expected_len);
}

Message OpRun::recv_kind(MsgKind kind, int peer, uint32_t step, size_t expected_len) {
  Message m;
  OpSignature theirs;
  switch (comm_.conns[peer]->wait(MsgKey{static_cast<uint32_t>(kind), op_.seq, step}, &sig_, &m,
                                  &theirs)) {
    case WaitStatus::kOk:
      break;
    case WaitStatus::kAborted:
      throw OpFailed{ncclInvalidUsage};
    case WaitStatus::kRemoteError:
      throw OpFailed{ncclRemoteError};
    case WaitStatus::kDesync:
      block_on_desync(peer, theirs);
  }
  if (m.header.len != expected_len) {
    // Same op on both sides but a different split of the data: also a desync.
    block_on_desync(peer, m.header.sig);
  }
  note_ready(m.header.ready_ns);
  return m;
}

void OpRun::block_on_desync(int peer, const OpSignature& theirs) {
  // A real NCCL would hang here (or worse, combine unrelated data); the sim hangs,
  // which is what the analyzer must diagnose, and says why when asked to.
  debug_log(comm_.label() + ": desync at op seq " + std::to_string(op_.seq) +
            ": this rank issued " + sig_.describe() + " but rank " + std::to_string(peer) +
            " issued " + theirs.describe() + "; blocking like NCCL would");
  std::unique_lock<std::mutex> lock(comm_.link->mu);
  comm_.link->cv.wait(lock, [&] { return comm_.link->aborted || comm_.link->revoked; });
  throw OpFailed{ncclInvalidUsage};
}

}  // namespace ringside::sim::nccl
