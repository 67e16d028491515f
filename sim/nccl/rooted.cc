// Collectives with a root: broadcast and reduce as a pipelined chain through the
// ranks in order starting at the root (as NCCL's ring does), gather and scatter as
// direct transfers to/from the root.
#include <cstring>

#include "algorithms.h"

namespace ringside::sim::nccl {
namespace {

// Position in the chain rooted at `root`, and the rank at a position.
int position(int rank, int root, int n) {
  return (rank - root + n) % n;
}
int rank_at(int pos, int root, int n) {
  return (pos + root) % n;
}

}  // namespace

void run_broadcast(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int pos = position(run.rank(), op.root, n);
  const size_t bytes = op.count * op.type_size();
  char* out = static_cast<char*>(op.recvbuff);
  if (pos == 0 && op.sendbuff != op.recvbuff) std::memmove(out, op.sendbuff, bytes);
  if (n == 1) return;

  if (bytes <= kDirectMaxBytes) {
    if (pos == 0) {
      for (int p = 0; p < n; ++p) {
        if (p != run.rank()) run.send(p, 0, out, bytes);
      }
    } else {
      Message m = run.recv(op.root, 0, bytes);
      std::memcpy(out, m.data.get(), bytes);
    }
    return;
  }
  const int prev = rank_at(pos - 1, op.root, n);
  const int next = pos + 1 < n ? rank_at(pos + 1, op.root, n) : -1;
  uint32_t step = 0;
  for (size_t off = 0; off < bytes; off += kChainChunkBytes, ++step) {
    size_t len = std::min(kChainChunkBytes, bytes - off);
    if (pos > 0) {
      Message m = run.recv(prev, step, len);
      std::memcpy(out + off, m.data.get(), len);
    }
    if (next >= 0) run.send(next, step, out + off, len);
  }
}

void run_reduce(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int pos = position(run.rank(), op.root, n);
  const size_t es = op.type_size();
  const size_t bytes = op.count * es;
  // The partial result flows from the chain's far end towards the root.
  const int from = pos + 1 < n ? rank_at(pos + 1, op.root, n) : -1;
  const int to = pos > 0 ? rank_at(pos - 1, op.root, n) : -1;
  auto acc = scratch(std::min(bytes, kChainChunkBytes));
  uint32_t step = 0;
  for (size_t off = 0; off < bytes || (bytes == 0 && step == 0); off += kChainChunkBytes, ++step) {
    size_t len = std::min(kChainChunkBytes, bytes - off);
    size_t elems = len / es;
    prepare_input(acc.get(), static_cast<const char*>(op.sendbuff) + off, elems, op.dtype,
                  op.reduction);
    if (from >= 0) {
      Message m = run.recv(from, step, len);
      reduce_into(acc.get(), m.data.get(), elems, op.dtype, op.reduction);
    }
    if (to >= 0) {
      run.send(to, step, acc.get(), len);
    } else {
      finish_output(acc.get(), elems, op.dtype, op.reduction);
      std::memcpy(static_cast<char*>(op.recvbuff) + off, acc.get(), len);
    }
    if (bytes == 0) break;
  }
}

void run_gather(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int r = run.rank();
  const size_t block = op.count * op.type_size();
  if (r != op.root) {
    run.send(op.root, 0, op.sendbuff, block);
    return;
  }
  char* out = static_cast<char*>(op.recvbuff);
  std::memmove(out + r * block, op.sendbuff, block);
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    Message m = run.recv(p, 0, block);
    std::memcpy(out + p * block, m.data.get(), block);
  }
}

void run_scatter(OpRun& run) {
  const OpDesc& op = run.op();
  const int n = run.nranks();
  const int r = run.rank();
  const size_t block = op.count * op.type_size();
  if (r != op.root) {
    Message m = run.recv(op.root, 0, block);
    std::memcpy(op.recvbuff, m.data.get(), block);
    return;
  }
  const char* in = static_cast<const char*>(op.sendbuff);
  for (int p = 0; p < n; ++p) {
    if (p != r) run.send(p, 0, in + p * block, block);
  }
  std::memmove(op.recvbuff, in + r * block, block);
}

}  // namespace ringside::sim::nccl
