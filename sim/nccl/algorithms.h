// Collective algorithms over OpRun's tagged point-to-point messages. Each moves
// real data and reduces in an order that gives every rank bit-identical results:
//  - all_reduce.cc: direct exchange for small buffers, ring reduce-scatter + all-gather otherwise;
//  - reduce_scatter.cc, all_gather.cc: the same two shapes;
//  - rooted.cc: broadcast and reduce as a pipelined chain from/to the root, gather, scatter;
//  - alltoall.cc: direct exchange;
//  - p2p.cc: grouped send/recv.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "op_run.h"

namespace ringside::sim::nccl {

// Buffers up to this size use a single direct exchange instead of a ring (latency).
inline constexpr size_t kDirectMaxBytes = 64 << 10;
// Chains (broadcast, reduce) move data in pieces of this size so hops overlap.
inline constexpr size_t kChainChunkBytes = 4 << 20;

void run_all_reduce(OpRun& run);
void run_reduce_scatter(OpRun& run);
void run_all_gather(OpRun& run);
void run_broadcast(OpRun& run);
void run_reduce(OpRun& run);
void run_gather(OpRun& run);
void run_scatter(OpRun& run);
void run_alltoall(OpRun& run);
// Dispatches on run.op().func (collectives only).
void run_collective(OpRun& run);

// Sends and receives of one group on one communicator, progressed together.
// Returns the latest arrival seen (for pacing); throws OpFailed.
int64_t run_p2p_batch(Comm& comm, const std::vector<const OpDesc*>& ops);

// Helpers shared by the ring algorithms.
struct Segments {
  Segments(size_t count, int n) : count_(count), n_(n) {}
  size_t offset(int i) const { return i * (count_ / n_) + std::min<size_t>(i, count_ % n_); }
  size_t length(int i) const {
    return count_ / n_ + (static_cast<size_t>(i) < count_ % n_ ? 1 : 0);
  }

 private:
  size_t count_;
  int n_;
};

// Ring reduce-scatter in place on `work` (already prepared inputs): afterwards segment
// `rank` of `work` holds the full reduction. Uses message steps [0, n-1).
void ring_reduce_scatter(OpRun& run, char* work, const Segments& seg);
// Ring all-gather in place on `work`, where segment `rank` is this rank's. Steps start at
// `first_step`.
void ring_all_gather(OpRun& run, char* work, const Segments& seg, uint32_t first_step);

inline std::unique_ptr<char[]> scratch(size_t bytes) {
  return std::unique_ptr<char[]>(new char[bytes ? bytes : 1]);
}

}  // namespace ringside::sim::nccl
