// One entry per collective, filled by coll_<name>.cpp (nccl-tests style): buffer
// sizes, the NCCL call, and the host model of inputs and expected outputs.
// The driver (runner.cpp) knows nothing collective-specific.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <span>
#include <string_view>

#include "bench/host_data.h"
#include "ringside/trace_schema.h"

namespace ringside::bench {

// Element counts for one size (nccl-tests' GetCollByteCount).  The in-place
// offsets are per rank: in place, rank r sends from recvbuff + send_inplace_offset*r
// and receives at recvbuff + recv_inplace_offset*r.
struct Counts {
  size_t send = 0;
  size_t recv = 0;
  size_t param = 0;  // the count passed to NCCL (the table's "count" column)
  size_t send_inplace_offset = 0;
  size_t recv_inplace_offset = 0;
};

struct CollArgs {
  const void* send;
  void* recv;
  size_t count;  // Counts::param
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
  int rank;
  int nranks;
  ncclComm_t comm;
  cudaStream_t stream;
};

struct Collective {
  const char* name;     // command-line name, e.g. "all_reduce"
  trace::OpKind kind;   // for the trace and the bandwidth factor (send/recv: kSend)
  bool has_redop;       // a reduction: the data check applies the op
  bool op_rows;         // nccl-tests runs a row per -o op and shows it in the redop column
                        // (the reductions, and sendrecv, whose op does nothing), else "none"
  bool has_root;        // root column and -r apply, else -1
  bool check_in_place;  // false: in-place results are not checked (sendrecv), "N/A"
  Counts (*counts)(size_t count, size_t elt_size, int nranks);
  ncclResult_t (*run)(const CollArgs& a);
  // Whether `rank` receives a result (reduce, gather: the root only).
  bool (*receives)(int rank, int root);
  // Element j < Counts::recv of the result on `rank`; inputs are gen(r, i), i < Counts::send.
  double (*output)(const InputGen& gen, const Counts& c, int rank, int root, size_t j);
};

extern const Collective kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll,
    kGather, kScatter, kSendRecv;

std::span<const Collective* const> all_collectives();
const Collective* find_collective(std::string_view name);

// Helpers shared by the collective files.
inline size_t aligned_share(size_t count, size_t elt_size, int nranks) {
  // nccl-tests: per-rank share rounded down to a multiple of 16 bytes.
  const size_t per = count / static_cast<size_t>(nranks);
  const size_t align = elt_size >= 16 ? 1 : 16 / elt_size;
  return per & ~(align - 1);
}
inline bool everyone_receives(int, int) {
  return true;
}
inline bool root_receives(int rank, int root) {
  return rank == root;
}

}  // namespace ringside::bench
