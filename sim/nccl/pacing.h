// How long an op takes in the cluster model. Ring-shaped costs (what NCCL's ring
// algorithms take on an ideal network):
//   all_reduce           2(n-1) lat + 2(n-1)/n * S / bw      S = count * size
//   all_gather, reduce_scatter  (n-1) lat + (n-1)/n * S / bw  S = n * count * size
//   broadcast, reduce    (n-1) lat + S / bw                  (pipelined chain)
//   alltoall             lat + (n-1)/n * S / bw_all_pairs    S = n * count * size
//   gather, scatter      lat + (n-1) * count * size / bw_root
//   send/recv            lat + S / bw(pair)
// bw is the slowest link the op uses (ring neighbours; every pair for alltoall; the
// root's links for gather/scatter; the pair for p2p) and lat the largest latency;
// inter-node links include slow_nic and slow_pair. The result is multiplied by the
// largest slow_gpu factor among the members (all members finish together).
#pragma once

#include <cstdint>

#include "comm.h"
#include "op.h"

namespace ringside::sim::nccl {

int64_t model_duration_ns(const Comm& comm, const OpDesc& op);

}  // namespace ringside::sim::nccl
