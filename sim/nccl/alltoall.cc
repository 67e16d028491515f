#include <cstring>

#include "algorithms.h"

namespace ringside::sim::nccl {

void run_alltoall(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int r = run.rank();
  const size_t block = op.count * op.type_size();
  const char* in = static_cast<const char*>(op.sendbuff);
  char* out = static_cast<char*>(op.recvbuff);
  // Every send has handed its bytes to the kernel before any block is received, so
  // sendbuff == recvbuff works too.
  for (int k = 1; k < n; ++k) {
    int p = (r + k) % n;
    run.send(p, 0, in + p * block, block);
  }
  if (in != out) std::memmove(out + r * block, in + r * block, block);
  for (int k = 1; k < n; ++k) {
    int p = (r - k + n) % n;
    Message m = run.recv(p, 0, block);
    std::memcpy(out + p * block, m.data.get(), block);
  }
}

}  // namespace ringside::sim::nccl
