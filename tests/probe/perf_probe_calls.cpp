// Host overhead of the probe per NCCL call, measured in one process: batches
// of ncclAllReduce(count = 0) on a one-rank communicator (an op that does no
// work) go alternately through the exported symbol (the probe, when
// preloaded) and straight to NCCL's pncclAllReduce.  Prints the median
// per-call time of each and the difference.  Used by scripts/perf-probe.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = argc > 1 ? std::atoi(argv[1]) : 400;
  const int per_batch = argc > 2 ? std::atoi(argv[2]) : 500;
  using Fn = decltype(&pncclAllReduce);
  auto direct = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "pncclAllReduce"));
  if (direct == nullptr) {
    std::fprintf(stderr, "perf_probe_calls: pncclAllReduce not found in the loaded NCCL\n");
    return 2;
  }
  cudaSetDevice(0);
  ncclUniqueId id;
  ncclComm_t comm;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
    std::fprintf(stderr, "perf_probe_calls: cannot create a one-rank communicator\n");
    return 2;
  }
  cudaStream_t s;
  cudaStreamCreate(&s);
  float* buf = nullptr;
  cudaMalloc(&buf, 64);
  std::vector<double> through, straight;
  for (int b = 0; b < batches; ++b) {
    for (int which = 0; which < 2; ++which) {
      const bool probe = (which == 0) == (b % 2 == 0);  // alternate the order too
      const int64_t t0 = now_ns();
      if (probe) {
        for (int i = 0; i < per_batch; ++i) ncclAllReduce(buf, buf, 0, ncclFloat, ncclSum, comm, s);
      } else {
        for (int i = 0; i < per_batch; ++i) direct(buf, buf, 0, ncclFloat, ncclSum, comm, s);
      }
      const double per_call = static_cast<double>(now_ns() - t0) / per_batch;
      (probe ? through : straight).push_back(per_call);
    }
    cudaStreamSynchronize(s);
    if (b % 16 == 15) usleep(60000);  // lets the writer drain the ring: never measure drops
  }
  const double a = median(through);
  const double d = median(straight);
  std::printf("calls %d x %d\nmedian_ns_exported %.1f\nmedian_ns_direct %.1f\noverhead_ns %.1f\n",
              batches, per_batch, a, d, a - d);
  cudaFree(buf);
  ncclCommDestroy(comm);
  return 0;
}
