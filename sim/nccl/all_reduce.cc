#include <cstring>

#include "algorithms.h"

namespace ringside::sim::nccl {

void run_all_reduce(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int r = run.rank();
  const size_t es = op.type_size();
  const size_t bytes = op.count * es;
  char* out = static_cast<char*>(op.recvbuff);

  if (n == 1 || bytes <= kDirectMaxBytes) {
    // Everyone sends its prepared input to everyone; all reduce in rank order.
    auto mine = scratch(bytes);
    prepare_input(mine.get(), op.sendbuff, op.count, op.dtype, op.reduction);
    for (int p = 0; p < n; ++p) {
      if (p != r) run.send(p, 0, mine.get(), bytes);
    }
    std::vector<Message> in(n);
    for (int p = 0; p < n; ++p) {
      if (p != r) in[p] = run.recv(p, 0, bytes);
    }
    auto acc = scratch(bytes);
    std::memcpy(acc.get(), r == 0 ? mine.get() : in[0].data.get(), bytes);
    for (int p = 1; p < n; ++p) {
      reduce_into(acc.get(), p == r ? mine.get() : in[p].data.get(), op.count, op.dtype,
                  op.reduction);
    }
    finish_output(acc.get(), op.count, op.dtype, op.reduction);
    std::memcpy(out, acc.get(), bytes);
    return;
  }

  prepare_input(out, op.sendbuff, op.count, op.dtype, op.reduction);
  Segments seg(op.count, n);
  ring_reduce_scatter(run, out, seg);
  finish_output(out + seg.offset(r) * es, seg.length(r), op.dtype, op.reduction);
  ring_all_gather(run, out, seg, static_cast<uint32_t>(n - 1));
}

}  // namespace ringside::sim::nccl
