#include <cstring>

#include "algorithms.h"

namespace ringside::sim::nccl {

void run_reduce_scatter(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int r = run.rank();
  const size_t es = op.type_size();
  const size_t block = op.count * es;  // recvcount elements per rank
  const size_t total = block * n;

  // Inputs are prepared into scratch: sendbuff must stay untouched (it may also
  // overlap recvbuff in the in-place form).
  auto work = scratch(total);
  prepare_input(work.get(), op.sendbuff, op.count * n, op.dtype, op.reduction);

  if (n == 1 || total <= kDirectMaxBytes) {
    for (int p = 0; p < n; ++p) {
      if (p != r) run.send(p, 0, work.get() + p * block, block);
    }
    std::vector<Message> in(n);
    for (int p = 0; p < n; ++p) {
      if (p != r) in[p] = run.recv(p, 0, block);
    }
    auto acc = scratch(block);
    std::memcpy(acc.get(), r == 0 ? work.get() + r * block : in[0].data.get(), block);
    for (int p = 1; p < n; ++p) {
      reduce_into(acc.get(), p == r ? work.get() + r * block : in[p].data.get(), op.count, op.dtype,
                  op.reduction);
    }
    finish_output(acc.get(), op.count, op.dtype, op.reduction);
    std::memcpy(op.recvbuff, acc.get(), block);
    return;
  }

  Segments seg(op.count * n, n);  // equal blocks: segment i is rank i's block
  ring_reduce_scatter(run, work.get(), seg);
  finish_output(work.get() + r * block, op.count, op.dtype, op.reduction);
  std::memcpy(op.recvbuff, work.get() + r * block, block);
}

}  // namespace ringside::sim::nccl
