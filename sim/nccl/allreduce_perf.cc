// Measures all-reduce bus bandwidth on the sim and prints the cluster model's time
// next to it, for sizes 8 B .. --max-bytes (x4 steps, then --max-bytes). One process per rank:
//   simrun -n 8 -- ringsim_allreduce_perf [--max-bytes N] [--ranks-per-node K]
// (needs RANK, WORLD_SIZE, LOCAL_RANK and NCCL_COMM_ID, as simrun sets them), with
// LD_LIBRARY_PATH pointing at the sim lib dir. Model: ring all-reduce,
// 2(n-1)*lat + 2(n-1)/n * S / bw, with the default cluster's links (see docs/sim.md).
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0') {
    std::fprintf(stderr, "ringsim_allreduce_perf: %s='%s' is not an integer\n", name, v);
    std::exit(2);
  }
  return static_cast<int>(x);
}

#define CHECK_NCCL(call)                                                          \
  do {                                                                            \
    ncclResult_t r_ = (call);                                                     \
    if (r_ != ncclSuccess) {                                                      \
      std::fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), \
                   ncclGetLastError(nullptr));                                    \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)
#define CHECK_CUDA(call)                                                      \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  size_t max_bytes = 256u << 20;
  int ranks_per_node = 8;
  double intra_gbps = 4.0, intra_lat_us = 3.0, inter_gbps = 1.0,
         inter_lat_us = 10.0;  // sim defaults
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ringsim_allreduce_perf: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--max-bytes")
      max_bytes = std::strtoull(next(), nullptr, 10);
    else if (a == "--ranks-per-node")
      ranks_per_node = std::atoi(next());
    else if (a == "--intra")
      intra_gbps = std::atof(next());
    else if (a == "--inter")
      inter_gbps = std::atof(next());
    else {
      std::fprintf(stderr,
                   "usage: ringsim_allreduce_perf [--max-bytes N] [--ranks-per-node K] [--intra "
                   "GBps] [--inter GBps]\n");
      return 2;
    }
  }
  const int rank = env_int("RANK", -1);
  const int nranks = env_int("WORLD_SIZE", -1);
  if (rank < 0 || nranks < 1 || std::getenv("NCCL_COMM_ID") == nullptr) {
    std::fprintf(
        stderr,
        "ringsim_allreduce_perf: set RANK, WORLD_SIZE and NCCL_COMM_ID (run it under simrun)\n");
    return 2;
  }
  CHECK_CUDA(cudaSetDevice(env_int("LOCAL_RANK", 0)));
  ncclUniqueId id;
  CHECK_NCCL(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* buf = nullptr;
  CHECK_CUDA(cudaMalloc(&buf, max_bytes));
  CHECK_CUDA(cudaMemset(buf, 0, max_bytes));

  const bool multi_node = nranks > ranks_per_node;
  const double bw = (multi_node ? inter_gbps : intra_gbps) * 1e9;
  const double lat = (multi_node ? inter_lat_us : intra_lat_us) * 1e-6;
  if (rank == 0) {
    std::printf("# all-reduce, float sum, %d ranks (%d per node), model bw %.2f GB/s lat %.1f us\n",
                nranks, ranks_per_node, bw / 1e9, lat * 1e6);
    std::printf("%12s %8s %12s %12s %10s %10s %8s\n", "bytes", "iters", "time_us", "model_us",
                "busbw", "model_bw", "ratio");
  }
  std::vector<size_t> sizes;
  for (size_t b = 8; b <= max_bytes; b *= 4) sizes.push_back(b);
  if (sizes.empty() || sizes.back() != max_bytes) sizes.push_back(max_bytes);
  for (size_t bytes : sizes) {
    size_t count = bytes / sizeof(float);
    int iters = bytes <= (1u << 20) ? 20 : (bytes <= (16u << 20) ? 5 : 2);
    CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream));  // warm-up
    CHECK_CUDA(cudaStreamSynchronize(stream));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      CHECK_NCCL(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    double factor = 2.0 * (nranks - 1) / nranks;
    double model = nranks > 1 ? 2.0 * (nranks - 1) * lat + factor * bytes / bw : 0;
    if (rank == 0) {
      std::printf("%12zu %8d %12.1f %12.1f %10.3f %10.3f %8.2f\n", bytes, iters, sec * 1e6,
                  model * 1e6, factor * bytes / sec / 1e9,
                  model > 0 ? factor * bytes / model / 1e9 : 0.0, model > 0 ? sec / model : 0.0);
      std::fflush(stdout);
    }
  }
  CHECK_CUDA(cudaFree(buf));
  CHECK_NCCL(ncclCommDestroy(comm));
  return 0;
}
