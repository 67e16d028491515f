// Send/Recv. A receiver first tells the sender it has arrived (an ack carrying its
// arrival time), then waits for the data; a sender pushes the data eagerly and
// completes once the receiver's ack is in, so a send to a rank that never posts the
// receive blocks as in NCCL. All ops of one group are posted before any wait, which
// is why grouped send/recv pairs never deadlock.
#include <cstring>
#include <deque>

#include "algorithms.h"
#include "last_error.h"

namespace ringside::sim::nccl {

int64_t run_p2p_batch(Comm& comm, const std::vector<const OpDesc*>& ops) {
  std::vector<std::unique_ptr<OpRun>> runs;
  std::deque<const OpDesc*> self_sends, self_recvs;
  for (const OpDesc* op : ops) {
    if (op->root == comm.rank) {
      (op->func == Func::kSend ? self_sends : self_recvs).push_back(op);
      continue;
    }
    runs.push_back(std::make_unique<OpRun>(comm, *op, MsgKind::kP2P));
  }
  int64_t ready = now_ns();
  // Post: acks for receives, data for sends.
  for (auto& run : runs) {
    const OpDesc& op = run->op();
    if (op.func == Func::kRecv) {
      run->send_kind(MsgKind::kP2PAck, op.root, 0, nullptr, 0);
    } else {
      run->send_kind(MsgKind::kP2P, op.root, 0, op.sendbuff, op.count * op.type_size());
    }
  }
  // A rank sending to itself: pairs match in order within the group.
  while (!self_sends.empty() && !self_recvs.empty()) {
    const OpDesc* s = self_sends.front();
    const OpDesc* r = self_recvs.front();
    self_sends.pop_front();
    self_recvs.pop_front();
    if (s->count * s->type_size() != r->count * r->type_size()) {
      fail(ncclInvalidUsage, comm.label() + ": send to self of " + std::to_string(s->count) +
                                 " elements does not match the receive from self of " +
                                 std::to_string(r->count));
      throw OpFailed{ncclInvalidUsage};
    }
    std::memmove(r->recvbuff, s->sendbuff, s->count * s->type_size());
  }
  if (!self_sends.empty() || !self_recvs.empty()) {
    fail(ncclInvalidUsage,
         comm.label() + ": a send to self without a matching receive from self in the same group");
    throw OpFailed{ncclInvalidUsage};
  }
  // Wait: data for receives, acks for sends.
  for (auto& run : runs) {
    const OpDesc& op = run->op();
    if (op.func == Func::kRecv) {
      size_t bytes = op.count * op.type_size();
      Message m = run->recv_kind(MsgKind::kP2P, op.root, 0, bytes);
      std::memcpy(op.recvbuff, m.data.get(), bytes);
    } else {
      run->recv_kind(MsgKind::kP2PAck, op.root, 0, 0);
    }
    ready = std::max(ready, run->ready_ns());
  }
  return ready;
}

}  // namespace ringside::sim::nccl
