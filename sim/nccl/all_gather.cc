#include <cstring>

#include "algorithms.h"

namespace ringside::sim::nccl {

void run_all_gather(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int r = run.rank();
  const size_t block = op.count * op.type_size();
  char* out = static_cast<char*>(op.recvbuff);
  // In place when sendbuff == recvbuff + r * block; memmove covers both forms.
  std::memmove(out + r * block, op.sendbuff, block);

  if (n == 1 || block * n <= kDirectMaxBytes) {
    for (int p = 0; p < n; ++p) {
      if (p != r) run.send(p, 0, out + r * block, block);
    }
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      Message m = run.recv(p, 0, block);
      std::memcpy(out + p * block, m.data.get(), block);
    }
    return;
  }
  Segments seg(op.count * n, n);
  ring_all_gather(run, out, seg, 0);
}

}  // namespace ringside::sim::nccl
