// sim_nccl_worker: one rank of a multi-process NCCL test, written against the real
// CUDA runtime and NCCL API and run on the sim (LD_LIBRARY_PATH = sim lib dir).
// Identity: RANK, WORLD_SIZE, NCCL_COMM_ID (or RINGSIM_TEST_ID_FILE: rank 0 writes its
// ncclUniqueId there, the others read it). Exit status: 0 pass, 1 wrong result or
// failed call, 3 an asynchronous NCCL error was reported (fault scenarios).
//
//   colls            every collective x datatype x op, in and out of place, odd counts
//   group            grouped send/recv rings (incl. to self) and grouped collectives
//   split            ncclCommSplit with colours, keys and NCCL_SPLIT_NOCOLOR
//   shrink           ncclCommShrink without the last rank
//   nonblocking      ncclCommInitRankConfig with blocking = 0
//   initall N        ncclCommInitAll over N devices of this one process
//   timing BYTES     prints the mean all-reduce and send/recv times in microseconds
//   loop K [DESYNC]  K all-reduces, watching ncclCommGetAsyncError; with DESYNC rank 1
//                    uses another count at op 3
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "worker_types.h"

using ringside::test::get;
using ringside::test::input_value;
using ringside::test::is_integer;
using ringside::test::put;
using ringside::test::type_size;

namespace {

int g_rank = 0;
int g_nranks = 1;
long g_checks = 0;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "worker rank %d: %s\n", g_rank, what.c_str());
  std::exit(1);
}

void nccl_ok(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) {
    die(std::string(call) + " -> " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) +
        ")");
  }
}
void cuda_ok(cudaError_t e, const char* call) {
  if (e != cudaSuccess) die(std::string(call) + " -> " + cudaGetErrorString(e));
}
#define NCCL(x) nccl_ok((x), #x)
#define CUDA(x) cuda_ok((x), #x)

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) die(std::string(name) + " is not set");
  return std::atoi(v);
}

ncclComm_t init_world() {
  ncclUniqueId id;
  if (const char* file = std::getenv("RINGSIM_TEST_ID_FILE")) {
    if (g_rank == 0) {
      NCCL(ncclGetUniqueId(&id));
      std::string tmp = std::string(file) + ".tmp";
      std::ofstream(tmp, std::ios::binary).write(id.internal, sizeof id.internal);
      std::rename(tmp.c_str(), file);
    } else {
      for (;;) {
        std::ifstream in(file, std::ios::binary);
        if (in && in.read(id.internal, sizeof id.internal)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  } else {
    NCCL(ncclGetUniqueId(&id));
  }
  ncclComm_t comm;
  NCCL(ncclCommInitRank(&comm, g_nranks, id, g_rank));
  return comm;
}

struct DevBuf {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DevBuf(size_t b) : bytes(b) { CUDA(cudaMalloc(&ptr, b ? b : 1)); }
  ~DevBuf() { cudaFree(ptr); }
  char* at(size_t off) { return static_cast<char*>(ptr) + off; }
};

std::vector<char> download(const void* dev, size_t bytes) {
  std::vector<char> h(bytes ? bytes : 1);
  CUDA(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
  return h;
}

void upload(void* dev, const std::vector<char>& host) {
  CUDA(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice));
}

// Host buffer holding rank r's contribution at positions [0, count).
std::vector<char> contribution(ncclDataType_t t, ncclRedOp_t op, int r, size_t count) {
  std::vector<char> h(count * type_size(t) + 1);
  for (size_t i = 0; i < count; ++i) put(t, h.data(), i, input_value(t, op, r, i));
  h.resize(count * type_size(t));
  return h;
}

// The reduction of every rank's value at index i.
double reduced(ncclDataType_t t, ncclRedOp_t op, size_t i, double premul) {
  double acc = 0;
  for (int r = 0; r < g_nranks; ++r) {
    double v = input_value(t, op, r, i);
    if (r == 0) {
      acc = op == ncclSum || op == ncclAvg || op >= ncclNumOps ? 0 : v;
    }
    switch (op) {
      case ncclProd:
        if (r > 0) acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op == ncclAvg) acc = is_integer(t) ? std::trunc(acc / g_nranks) : acc / g_nranks;
  if (op >= ncclNumOps) acc *= premul;
  return acc;
}

void expect(ncclDataType_t t, ncclRedOp_t op, const std::vector<char>& got, size_t i, double want,
            const std::string& what) {
  double g = get(t, got.data(), i);
  double w;
  {
    // Integer results wrap in the datatype, as on the GPU.
    char tmp[8];
    put(t, tmp, 0, want);
    w = get(t, tmp, 0);
  }
  double tol = 0;
  if (op == ncclAvg && !is_integer(t)) {
    // Average pre-multiplies by 1/n in the datatype: rounding, not equality.
    tol = t == ncclFloat32 || t == ncclFloat64 ? 1e-5
          : t == ncclFloat16                   ? 1e-2
          : t == ncclBfloat16                  ? 4e-2
                                               : 0.3;
    tol *= std::max(1.0, std::fabs(want));
    w = want;
  }
  ++g_checks;
  if (!(std::fabs(g - w) <= tol)) {
    die(what + " type " + std::to_string(t) + " op " + std::to_string(op) + " index " +
        std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w));
  }
}

// One collective, checked; `inplace` selects NCCL's in-place form.
void check_collective(ncclComm_t comm, cudaStream_t s, const std::string& coll, ncclDataType_t t,
                      ncclRedOp_t op, size_t count, bool inplace, double premul = 1) {
  const int n = g_nranks, me = g_rank, root = n - 1;
  const size_t es = type_size(t), block = count * es;
  const std::string what =
      coll + (inplace ? " in-place" : " out-of-place") + " count " + std::to_string(count);
  if (coll == "allreduce" || coll == "reduce" || coll == "broadcast" || coll == "bcast") {
    DevBuf send(block), recv(block);
    const int bc_root = 1 % n;
    upload(send.ptr, contribution(t, op, me, count));
    void* out = inplace ? send.ptr : recv.ptr;
    if (coll == "allreduce") NCCL(ncclAllReduce(send.ptr, out, count, t, op, comm, s));
    if (coll == "reduce") NCCL(ncclReduce(send.ptr, out, count, t, op, root, comm, s));
    if (coll == "broadcast") NCCL(ncclBroadcast(send.ptr, out, count, t, bc_root, comm, s));
    if (coll == "bcast") {
      out = send.ptr;
      NCCL(ncclBcast(send.ptr, count, t, bc_root, comm, s));
    }
    CUDA(cudaStreamSynchronize(s));
    if (coll == "reduce" && me != root) return;
    auto got = download(out, block);
    for (size_t i = 0; i < count; ++i) {
      double want = (coll == "broadcast" || coll == "bcast") ? input_value(t, op, bc_root, i)
                                                             : reduced(t, op, i, premul);
      expect(t, coll.starts_with("b") ? ncclSum : op, got, i, want, what);
    }
  } else if (coll == "reducescatter") {
    // Rank r contributes value(r, j) at global index j of n * count.
    DevBuf send(block * n), recv(block);
    upload(send.ptr, contribution(t, op, me, count * n));
    void* out = inplace ? send.at(me * block) : recv.ptr;
    NCCL(ncclReduceScatter(send.ptr, out, count, t, op, comm, s));
    CUDA(cudaStreamSynchronize(s));
    auto got = download(out, block);
    for (size_t i = 0; i < count; ++i)
      expect(t, op, got, i, reduced(t, op, me * count + i, premul), what);
  } else if (coll == "allgather" || coll == "gather") {
    DevBuf send(block), recv(block * n);
    const bool at_root = coll == "allgather" || me == root;
    const void* in = send.ptr;
    if (inplace && at_root) {
      in = recv.at(me * block);
      upload(recv.at(me * block), contribution(t, op, me, count));
    } else {
      upload(send.ptr, contribution(t, op, me, count));
    }
    if (coll == "allgather")
      NCCL(ncclAllGather(in, recv.ptr, count, t, comm, s));
    else
      NCCL(ncclGather(in, recv.ptr, count, t, root, comm, s));
    CUDA(cudaStreamSynchronize(s));
    if (!at_root) return;
    auto got = download(recv.ptr, block * n);
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < count; ++i)
        expect(t, ncclSum, got, p * count + i, input_value(t, op, p, i), what);
    }
  } else if (coll == "scatter") {
    DevBuf send(block * n), recv(block);
    // The root's buffer: block p holds value(root, p * count + i).
    if (me == root) upload(send.ptr, contribution(t, op, root, count * n));
    void* out = (inplace && me == root) ? send.at(me * block) : recv.ptr;
    NCCL(ncclScatter(send.ptr, out, count, t, root, comm, s));
    CUDA(cudaStreamSynchronize(s));
    auto got = download(out, block);
    for (size_t i = 0; i < count; ++i)
      expect(t, ncclSum, got, i, input_value(t, op, root, me * count + i), what);
  } else if (coll == "alltoall") {
    DevBuf send(block * n), recv(block * n);
    upload(send.ptr, contribution(t, op, me, count * n));
    void* out = inplace ? send.ptr : recv.ptr;
    NCCL(ncclAlltoAll(send.ptr, out, count, t, comm, s));
    CUDA(cudaStreamSynchronize(s));
    auto got = download(out, block * n);
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < count; ++i) {
        expect(t, ncclSum, got, p * count + i, input_value(t, op, p, me * count + i), what);
      }
    }
  } else {
    die("unknown collective " + coll);
  }
}

int run_colls() {
  ncclComm_t comm = init_world();
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  const size_t small = 7, big = 20001;  // odd; `big` crosses the direct/ring threshold
  for (int ti = 0; ti < ncclNumTypes; ++ti) {
    auto t = static_cast<ncclDataType_t>(ti);
    for (bool inplace : {false, true}) {
      for (ncclRedOp_t op : ops) {
        for (const char* c : {"allreduce", "reduce", "reducescatter"})
          check_collective(comm, s, c, t, op, small, inplace);
      }
      for (const char* c : {"allgather", "broadcast", "bcast", "gather", "scatter", "alltoall"}) {
        check_collective(comm, s, c, t, ncclSum, small, inplace);
      }
      // Larger buffers take the ring / pipelined paths.
      for (ncclRedOp_t op : {ncclSum, ncclMax}) {
        for (const char* c : {"allreduce", "reduce", "reducescatter"})
          check_collective(comm, s, c, t, op, big, inplace);
      }
      for (const char* c : {"allgather", "broadcast", "alltoall"})
        check_collective(comm, s, c, t, ncclSum, big, inplace);
    }
    // Zero-sized ops return at once and do not disturb what follows.
    NCCL(ncclAllReduce(nullptr, nullptr, 0, t, ncclSum, comm, s));
  }
  check_collective(comm, s, "allreduce", ncclFloat32, ncclAvg, 4 * (1 << 15) + 1, false);
  // Pre-multiplied sum with a host scalar, and one in device memory.
  for (ncclScalarResidence_t res : {ncclScalarHostImmediate, ncclScalarDevice}) {
    float scalar = 2.0f;
    void* sp = &scalar;
    DevBuf dev_scalar(sizeof scalar);
    if (res == ncclScalarDevice) {
      CUDA(cudaMemcpy(dev_scalar.ptr, &scalar, sizeof scalar, cudaMemcpyHostToDevice));
      sp = dev_scalar.ptr;
    }
    ncclRedOp_t premul;
    NCCL(ncclRedOpCreatePreMulSum(&premul, sp, ncclFloat32, res, comm));
    for (size_t count : {small, big})
      check_collective(comm, s, "allreduce", ncclFloat32, premul, count, false, 2.0);
    NCCL(ncclRedOpDestroy(premul, comm));
  }
  CUDA(cudaStreamDestroy(s));
  NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: colls ok (%ld checks)\n", g_rank, g_checks);
  return 0;
}

int run_group() {
  ncclComm_t comm = init_world();
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  const int n = g_nranks, me = g_rank;
  const size_t count = 1001;
  // Every rank sends to every rank (itself included) in one group: never deadlocks.
  DevBuf send(count * 4 * n), recv(count * 4 * n);
  std::vector<char> h(count * 4 * n);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < count; ++i)
      reinterpret_cast<int32_t*>(h.data())[p * count + i] =
          me * 100000 + p * 1000 + static_cast<int>(i % 1000);
  }
  upload(send.ptr, h);
  for (int round = 0; round < 3; ++round) {
    NCCL(ncclGroupStart());
    for (int k = 0; k < n; ++k) {
      int to = (me + k) % n, from = (me - k + n) % n;
      NCCL(ncclSend(send.at(to * count * 4), count, ncclInt32, to, comm, s));
      NCCL(ncclRecv(recv.at(from * count * 4), count, ncclInt32, from, comm, s));
    }
    NCCL(ncclGroupEnd());
    CUDA(cudaStreamSynchronize(s));
    auto got = download(recv.ptr, count * 4 * n);
    for (int p = 0; p < n; ++p) {
      for (size_t i = 0; i < count; ++i) {
        int32_t v = reinterpret_cast<int32_t*>(got.data())[p * count + i];
        ++g_checks;
        if (v != p * 100000 + me * 1000 + static_cast<int>(i % 1000))
          die("grouped send/recv from rank " + std::to_string(p));
      }
    }
  }
  // A ring shift of large messages, receive posted before the send.
  if (n > 1) {
    const size_t big = (1 << 20) + 3;
    DevBuf a(big * 4), b(big * 4);
    std::vector<char> ha(big * 4);
    for (size_t i = 0; i < big; ++i)
      reinterpret_cast<int32_t*>(ha.data())[i] = me + static_cast<int>(i);
    upload(a.ptr, ha);
    NCCL(ncclGroupStart());
    NCCL(ncclRecv(b.ptr, big, ncclInt32, (me - 1 + n) % n, comm, s));
    NCCL(ncclSend(a.ptr, big, ncclInt32, (me + 1) % n, comm, s));
    NCCL(ncclGroupEnd());
    CUDA(cudaStreamSynchronize(s));
    auto got = download(b.ptr, big * 4);
    int from = (me - 1 + n) % n;
    for (size_t i = 0; i < big; i += 997) {
      ++g_checks;
      if (reinterpret_cast<int32_t*>(got.data())[i] != from + static_cast<int>(i))
        die("ring shift");
    }
  }
  // Grouped collectives complete together.
  DevBuf x(64 * 4), y(64 * 4);
  std::vector<char> hx(64 * 4);
  for (int i = 0; i < 64; ++i) reinterpret_cast<int32_t*>(hx.data())[i] = me + i;
  upload(x.ptr, hx);
  NCCL(ncclGroupStart());
  NCCL(ncclAllReduce(x.ptr, y.ptr, 64, ncclInt32, ncclSum, comm, s));
  NCCL(ncclAllReduce(x.ptr, x.ptr, 64, ncclInt32, ncclMax, comm, s));
  NCCL(ncclGroupEnd());
  CUDA(cudaStreamSynchronize(s));
  auto gy = download(y.ptr, 64 * 4), gx = download(x.ptr, 64 * 4);
  for (int i = 0; i < 64; ++i) {
    g_checks += 2;
    if (reinterpret_cast<int32_t*>(gy.data())[i] != n * (n - 1) / 2 + n * i)
      die("grouped all-reduce sum");
    if (reinterpret_cast<int32_t*>(gx.data())[i] != n - 1 + i) die("grouped all-reduce max");
  }
  NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: group ok (%ld checks)\n", g_rank, g_checks);
  return 0;
}

int run_split() {
  ncclComm_t world = init_world();
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  const int me = g_rank, n = g_nranks;
  // Colour by parity, keys reversed; the last rank opts out when n > 2.
  const bool out = n > 2 && me == n - 1;
  int color = out ? NCCL_SPLIT_NOCOLOR : me % 2;
  ncclComm_t sub = nullptr;
  NCCL(ncclCommSplit(world, color, -me, &sub, nullptr));
  if (out) {
    if (sub != nullptr) die("NCCL_SPLIT_NOCOLOR must give a NULL communicator");
  } else {
    std::vector<int> members;
    for (int r = 0; r < n; ++r) {
      if (r % 2 == color && !(n > 2 && r == n - 1)) members.push_back(r);
    }
    int count = 0, rank = 0;
    NCCL(ncclCommCount(sub, &count));
    NCCL(ncclCommUserRank(sub, &rank));
    // Keys -r: the highest world rank is sub rank 0.
    int expected_rank = 0;
    for (int r : members) expected_rank += r > me ? 1 : 0;
    if (count != static_cast<int>(members.size()) || rank != expected_rank) {
      die("split: count " + std::to_string(count) + " rank " + std::to_string(rank) + ", want " +
          std::to_string(members.size()) + " / " + std::to_string(expected_rank));
    }
    DevBuf b(4);
    std::vector<char> h(4);
    *reinterpret_cast<int32_t*>(h.data()) = me;
    upload(b.ptr, h);
    NCCL(ncclAllReduce(b.ptr, b.ptr, 1, ncclInt32, ncclSum, sub, s));
    CUDA(cudaStreamSynchronize(s));
    int sum = 0;
    for (int r : members) sum += r;
    if (*reinterpret_cast<int32_t*>(download(b.ptr, 4).data()) != sum)
      die("all-reduce on the split communicator");
    NCCL(ncclCommDestroy(sub));
  }
  // The parent still works after the split.
  DevBuf w(4);
  std::vector<char> h(4);
  *reinterpret_cast<int32_t*>(h.data()) = 1;
  upload(w.ptr, h);
  NCCL(ncclAllReduce(w.ptr, w.ptr, 1, ncclInt32, ncclSum, world, s));
  CUDA(cudaStreamSynchronize(s));
  if (*reinterpret_cast<int32_t*>(download(w.ptr, 4).data()) != n)
    die("all-reduce on the parent after the split");
  NCCL(ncclCommDestroy(world));
  std::printf("rank %d: split ok\n", g_rank);
  return 0;
}

int run_nonblocking() {
  ncclUniqueId id;
  NCCL(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, g_nranks, id, g_rank, &config);
  if (r != ncclInProgress && r != ncclSuccess) nccl_ok(r, "ncclCommInitRankConfig");
  ncclResult_t state = ncclInProgress;
  int polls = 0;
  do {
    NCCL(ncclCommGetAsyncError(comm, &state));
    ++polls;
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (state == ncclInProgress);
  nccl_ok(state, "non-blocking init (ncclCommGetAsyncError)");
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  DevBuf b(4);
  std::vector<char> h(4);
  *reinterpret_cast<int32_t*>(h.data()) = g_rank + 1;
  upload(b.ptr, h);
  NCCL(ncclAllReduce(b.ptr, b.ptr, 1, ncclInt32, ncclSum, comm, s));
  CUDA(cudaStreamSynchronize(s));
  if (*reinterpret_cast<int32_t*>(download(b.ptr, 4).data()) != g_nranks * (g_nranks + 1) / 2)
    die("all-reduce");
  NCCL(ncclCommFinalize(comm));
  NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: nonblocking ok (init returned %s, %d polls)\n", g_rank,
              r == ncclInProgress ? "ncclInProgress" : "ncclSuccess", polls);
  return 0;
}

int run_initall(int ndev) {
  std::vector<ncclComm_t> comms(ndev);
  std::vector<int> devs(ndev);
  for (int i = 0; i < ndev; ++i) devs[i] = ndev - 1 - i;  // user order differs from device order
  NCCL(ncclCommInitAll(comms.data(), ndev, devs.data()));
  std::vector<cudaStream_t> streams(ndev);
  std::vector<DevBuf*> bufs(ndev);
  const size_t count = 100001;
  for (int i = 0; i < ndev; ++i) {
    int dev = -1, rank = -1;
    NCCL(ncclCommCuDevice(comms[i], &dev));
    NCCL(ncclCommUserRank(comms[i], &rank));
    if (dev != devs[i] || rank != i)
      die("ncclCommInitAll: comm " + std::to_string(i) + " has device " + std::to_string(dev) +
          " rank " + std::to_string(rank));
    CUDA(cudaSetDevice(dev));
    CUDA(cudaStreamCreate(&streams[i]));
    bufs[i] = new DevBuf(count * 4);
    std::vector<char> h(count * 4);
    for (size_t k = 0; k < count; ++k)
      reinterpret_cast<float*>(h.data())[k] = static_cast<float>(i + k % 3);
    upload(bufs[i]->ptr, h);
  }
  NCCL(ncclGroupStart());
  for (int i = 0; i < ndev; ++i)
    NCCL(ncclAllReduce(bufs[i]->ptr, bufs[i]->ptr, count, ncclFloat32, ncclSum, comms[i],
                       streams[i]));
  NCCL(ncclGroupEnd());
  for (int i = 0; i < ndev; ++i) {
    CUDA(cudaSetDevice(devs[i]));
    CUDA(cudaStreamSynchronize(streams[i]));
    auto got = download(bufs[i]->ptr, count * 4);
    for (size_t k = 0; k < count; k += 7) {
      float want = static_cast<float>(ndev * (ndev - 1) / 2 + ndev * static_cast<int>(k % 3));
      ++g_checks;
      if (reinterpret_cast<float*>(got.data())[k] != want)
        die("ncclCommInitAll all-reduce on device " + std::to_string(devs[i]));
    }
    delete bufs[i];
  }
  for (auto c : comms) NCCL(ncclCommDestroy(c));
  std::printf("initall ok (%d devices, %ld checks)\n", ndev, g_checks);
  return 0;
}

int run_timing(size_t bytes) {
  ncclComm_t comm = init_world();
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  DevBuf a(bytes), b(bytes);
  CUDA(cudaMemset(a.ptr, 0, bytes));
  const int iters = 5;
  auto time_it = [&](const std::function<void()>& op) {
    op();  // warm-up
    CUDA(cudaStreamSynchronize(s));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) op();
    CUDA(cudaStreamSynchronize(s));
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           iters;
  };
  double ar =
      time_it([&] { NCCL(ncclAllReduce(a.ptr, a.ptr, bytes / 4, ncclFloat32, ncclSum, comm, s)); });
  // Pairs (0,1), (2,3), ...: rank 2k sends to 2k+1.
  double p2p = time_it([&] {
    int peer = g_rank ^ 1;
    if (peer >= g_nranks) return;
    if (g_rank % 2 == 0)
      NCCL(ncclSend(a.ptr, bytes / 4, ncclFloat32, peer, comm, s));
    else
      NCCL(ncclRecv(b.ptr, bytes / 4, ncclFloat32, peer, comm, s));
  });
  std::printf("rank %d allreduce_us %.1f sendrecv_us %.1f\n", g_rank, ar, p2p);
  NCCL(ncclCommDestroy(comm));
  return 0;
}

// Waits for the stream while watching the communicator, as a careful application does.
int wait_watching(ncclComm_t comm, cudaStream_t s) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(s);
    if (q == cudaSuccess) return 0;
    if (q != cudaErrorNotReady) die(std::string("cudaStreamQuery: ") + cudaGetErrorString(q));
    ncclResult_t err = ncclSuccess;
    NCCL(ncclCommGetAsyncError(comm, &err));
    if (err != ncclSuccess) {
      std::printf("rank %d: async error %s: %s\n", g_rank, ncclGetErrorString(err),
                  ncclGetLastError(comm));
      std::fflush(stdout);
      ncclCommAbort(comm);
      std::exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int run_loop(int k, bool desync) {
  ncclComm_t comm = init_world();
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  DevBuf b(1024 * 4);
  CUDA(cudaMemset(b.ptr, 0, 1024 * 4));
  for (int i = 0; i < k; ++i) {
    size_t count = (desync && i == 3 && g_rank == 1) ? 1000 : 1024;
    NCCL(ncclAllReduce(b.ptr, b.ptr, count, ncclFloat32, ncclSum, comm, s));
    std::printf("rank %d: issued op %d\n", g_rank, i);
    std::fflush(stdout);
    wait_watching(comm, s);
    std::printf("rank %d: completed op %d\n", g_rank, i);
    std::fflush(stdout);
  }
  NCCL(ncclCommDestroy(comm));
  std::printf("rank %d: done\n", g_rank);
  return 0;
}

// The last rank leaves; the others shrink the world without it and keep working.
int run_shrink() {
  ncclComm_t world = init_world();
  cudaStream_t s;
  CUDA(cudaStreamCreate(&s));
  const int n = g_nranks;
  if (g_rank == n - 1) {
    NCCL(ncclCommDestroy(world));
    std::printf("rank %d: shrink ok (left)\n", g_rank);
    return 0;
  }
  int excluded = n - 1;
  ncclComm_t small = nullptr;
  NCCL(ncclCommShrink(world, &excluded, 1, &small, nullptr, NCCL_SHRINK_DEFAULT));
  int count = 0;
  NCCL(ncclCommCount(small, &count));
  if (count != n - 1) die("shrunk communicator has " + std::to_string(count) + " ranks");
  DevBuf b(4);
  std::vector<char> h(4);
  *reinterpret_cast<int32_t*>(h.data()) = 1;
  upload(b.ptr, h);
  NCCL(ncclAllReduce(b.ptr, b.ptr, 1, ncclInt32, ncclSum, small, s));
  CUDA(cudaStreamSynchronize(s));
  if (*reinterpret_cast<int32_t*>(download(b.ptr, 4).data()) != n - 1)
    die("all-reduce on the shrunk communicator");
  NCCL(ncclCommDestroy(small));
  NCCL(ncclCommDestroy(world));
  std::printf("rank %d: shrink ok\n", g_rank);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: sim_nccl_worker colls|group|split|nonblocking|initall N|timing BYTES|loop "
                 "K [desync]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argv[1];
  if (mode == "initall") return run_initall(argc > 2 ? std::atoi(argv[2]) : 4);
  g_rank = env_int("RANK");
  g_nranks = env_int("WORLD_SIZE");
  CUDA(cudaSetDevice(g_rank % 8));
  if (mode == "colls") return run_colls();
  if (mode == "group") return run_group();
  if (mode == "split") return run_split();
  if (mode == "shrink") return run_shrink();
  if (mode == "nonblocking") return run_nonblocking();
  if (mode == "timing")
    return run_timing(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (4u << 20));
  if (mode == "loop")
    return run_loop(argc > 2 ? std::atoi(argv[2]) : 10,
                    argc > 3 && std::string(argv[3]) == "desync");
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
