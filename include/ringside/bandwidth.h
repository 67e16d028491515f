// Bandwidth math, nccl-tests conventions (documented in docs/bandwidth.md).
//
//   algbw = size / time
//   busbw = algbw * factor(op, nranks)
//
// `size` is nccl-tests' message size: the per-rank buffer for all_reduce,
// broadcast, reduce; the total gathered/scattered buffer for all_gather,
// reduce_scatter, alltoall, gather, scatter; the message for send/recv.
#pragma once

#include <cstdint>

#include "ringside/trace_schema.h"

namespace ringside {

// factor: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall, gather,
// scatter (n-1)/n; broadcast, reduce, send/recv 1.  n <= 1 gives 1 for the
// rooted/p2p ops and 0 for the others (no data crosses a link).
double bus_bw_factor(trace::OpKind op, int nranks);

struct Bandwidth {
  double alg_gbps = 0;  // GB/s, 1 GB = 1e9 bytes
  double bus_gbps = 0;
};

Bandwidth compute_bandwidth(trace::OpKind op, uint64_t size_bytes, double seconds, int nranks);

// The nccl-tests `size` of an op from the count passed to NCCL:
// count*dtype for all_reduce, broadcast, reduce, send, recv; count*dtype*nranks
// for all_gather, reduce_scatter, gather, scatter (NCCL's count is the per-rank
// part) and alltoall (NCCL's count is the per-peer part).
uint64_t nccl_tests_size(trace::OpKind op, uint64_t count, int dtype_bytes, int nranks);

// Size in bytes of an ncclDataType_t value (0 for an unknown value).
int nccl_dtype_size(int nccl_dtype);
const char* nccl_dtype_name(int nccl_dtype);
const char* nccl_redop_name(int nccl_redop);

}  // namespace ringside
