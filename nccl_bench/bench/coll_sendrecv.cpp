#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t, int) {
  return {count, count, count, 0, 0};
}

// A ring: every rank sends to rank+1 and receives from rank-1 (nccl-tests).
ncclResult_t run(const CollArgs& a) {
  const int send_peer = (a.rank + 1) % a.nranks;
  const int recv_peer = (a.rank - 1 + a.nranks) % a.nranks;
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  r = ncclSend(a.send, a.count, a.type, send_peer, a.comm, a.stream);
  const ncclResult_t r2 = ncclRecv(a.recv, a.count, a.type, recv_peer, a.comm, a.stream);
  const ncclResult_t r3 = ncclGroupEnd();
  if (r != ncclSuccess) return r;
  return r2 != ncclSuccess ? r2 : r3;
}

double output(const InputGen& gen, const Counts& c, int rank, int, size_t j) {
  (void)c;
  return gen((rank - 1 + gen.nranks) % gen.nranks, j);
}

}  // namespace

const Collective kSendRecv = {"sendrecv", trace::OpKind::kSend, false, true, false, false, counts,
                              run,        everyone_receives,    output};

}  // namespace ringside::bench
