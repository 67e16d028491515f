// The two ring phases shared by all-reduce, reduce-scatter and all-gather.
#include "algorithms.h"

#include <cstring>

namespace ringside::sim::nccl {

void ring_reduce_scatter(OpRun& run, char* work, const Segments& seg) {
  const int n = run.nranks();
  const int r = run.rank();
  const int right = (r + 1) % n;
  const int left = (r + n - 1) % n;
  const size_t es = run.op().type_size();
  // Step s sends the partial sum of segment r-1-s and folds the left neighbour's
  // partial sum of segment r-2-s into ours; after n-1 steps segment r is complete.
  for (int s = 0; s < n - 1; ++s) {
    int out = ((r - 1 - s) % n + n) % n;
    int in = ((r - 2 - s) % n + n) % n;
    run.send(right, static_cast<uint32_t>(s), work + seg.offset(out) * es, seg.length(out) * es);
    Message m = run.recv(left, static_cast<uint32_t>(s), seg.length(in) * es);
    reduce_into(work + seg.offset(in) * es, m.data.get(), seg.length(in), run.op().dtype,
                run.op().reduction);
  }
}

void ring_all_gather(OpRun& run, char* work, const Segments& seg, uint32_t first_step) {
  const int n = run.nranks();
  const int r = run.rank();
  const int right = (r + 1) % n;
  const int left = (r + n - 1) % n;
  const size_t es = run.op().type_size();
  for (int s = 0; s < n - 1; ++s) {
    int out = ((r - s) % n + n) % n;
    int in = ((r - 1 - s) % n + n) % n;
    run.send(right, first_step + s, work + seg.offset(out) * es, seg.length(out) * es);
    Message m = run.recv(left, first_step + s, seg.length(in) * es);
    std::memcpy(work + seg.offset(in) * es, m.data.get(), seg.length(in) * es);
  }
}

void run_collective(OpRun& run) {
  switch (run.op().func) {
    case Func::kAllReduce:
      return run_all_reduce(run);
    case Func::kReduceScatter:
      return run_reduce_scatter(run);
    case Func::kAllGather:
      return run_all_gather(run);
    case Func::kBroadcast:
      return run_broadcast(run);
    case Func::kReduce:
      return run_reduce(run);
    case Func::kGather:
      return run_gather(run);
    case Func::kScatter:
      return run_scatter(run);
    case Func::kAlltoAll:
      return run_alltoall(run);
    default:
      return;
  }
}

}  // namespace ringside::sim::nccl
