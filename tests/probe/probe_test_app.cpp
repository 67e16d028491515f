// A small NCCL program for the probe's integration tests, written against
// the real CUDA runtime and NCCL APIs (it runs on GPUs or on the sim).
// Every rank prints "r<rank> <what> rc=<code> sum=<checksum>" lines, so runs
// with and without the probe can be compared line by line.
//
//   probe_test_app init           only the world communicator, then exit at once
//   probe_test_app inits          non-blocking split, shrink, InitAll, InitRankScalable
//   probe_test_app graph K L      K all-reduces captured into a CUDA graph, launched L times,
//                                 while an earlier all-reduce is still running on another stream
//   probe_test_app ops            every collective, send/recv, split, error returns
//   probe_test_app loop N         all-reduces forever, "ready" after N
//   probe_test_app hang R N [G]   rank R stops before op N of the world comm; with G > 1 each
//                                 op is an NCCL group of G all-reduces on one stream
//   probe_test_app threads T K    T threads, each K all-reduces on its own split comm
//   probe_test_app fork K [F [T]] K ops, then F times: fork from T threads at once (each child
//                                 exits at once), K ops
//   probe_test_app crash K SIG    K ops, then the process dies of signal SIG
//   probe_test_app fork_writer_stuck K F
//                                 K ops; F forks while the probe's writer is held inside HDF5
//                                 (each child exits through exit()); K ops
//   probe_test_app fork_child_hdf5 K PATH
//                                 K ops; a child writes PATH with HDF5 and exits without
//                                 closing it; the parent reads it back; K ops
#include <cuda_runtime.h>
#include <hdf5.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_rank = 0;
int g_world = 1;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "r%d: %s failed: %s\n", g_rank, what, cudaGetErrorString(e));
    std::exit(3);
  }
}

void report(const char* what, ncclResult_t rc, double sum) {
  std::printf("r%d %s rc=%d sum=%.3f\n", g_rank, what, static_cast<int>(rc), sum);
  std::fflush(stdout);
}

struct Buffers {
  size_t n;
  float* send = nullptr;
  float* recv = nullptr;
  explicit Buffers(size_t count) : n(count) {
    check_cuda(cudaMalloc(&send, n * sizeof(float) * g_world), "cudaMalloc");
    check_cuda(cudaMalloc(&recv, n * sizeof(float) * g_world), "cudaMalloc");
  }
  ~Buffers() {
    cudaFree(send);
    cudaFree(recv);
  }
  void fill(cudaStream_t s) {
    std::vector<float> h(n * g_world);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((g_rank + 1) * 0.5 + i % 7);
    check_cuda(cudaMemcpyAsync(send, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice, s),
               "memcpy");
    check_cuda(cudaMemsetAsync(recv, 0, h.size() * sizeof(float), s), "memset");
    check_cuda(cudaStreamSynchronize(s), "sync");
  }
  double sum(cudaStream_t s, size_t count) {
    std::vector<float> h(count);
    check_cuda(cudaMemcpyAsync(h.data(), recv, count * sizeof(float), cudaMemcpyDeviceToHost, s),
               "memcpy");
    check_cuda(cudaStreamSynchronize(s), "sync");
    double t = 0;
    for (float v : h) t += v;
    return t;
  }
};

ncclComm_t init_world() {
  int ndev = 0;
  check_cuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  check_cuda(cudaSetDevice(env_int("LOCAL_RANK", 0) % (ndev > 0 ? ndev : 1)), "cudaSetDevice");
  ncclUniqueId id;
  ncclResult_t rc = ncclGetUniqueId(&id);  // NCCL_COMM_ID makes it the same on every rank
  if (rc != ncclSuccess) {
    std::fprintf(stderr, "r%d: ncclGetUniqueId: %s\n", g_rank, ncclGetErrorString(rc));
    std::exit(3);
  }
  ncclComm_t comm = nullptr;
  rc = ncclCommInitRank(&comm, g_world, id, g_rank);
  if (rc != ncclSuccess) {
    std::fprintf(stderr, "r%d: ncclCommInitRank: %s\n", g_rank, ncclGetErrorString(rc));
    std::exit(3);
  }
  return comm;
}

// One all-reduce of `n` floats on `comm`, reported as "r<rank> <what> ...".
void reduce_on(ncclComm_t comm, const char* what) {
  cudaStream_t s;
  check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  Buffers b(257);
  b.fill(s);
  const ncclResult_t rc = ncclAllReduce(b.send, b.recv, 257, ncclFloat, ncclSum, comm, s);
  report(what, rc, b.sum(s, 257));
  cudaStreamDestroy(s);
}

// Waits for a non-blocking communicator to be ready.
ncclResult_t wait_ready(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

// One all-reduce on each of a process's two members (devices 0 and 1) of a communicator,
// issued in one group; then both are destroyed.
void reduce_on_both(ncclComm_t comms[2], const char* what) {
  cudaStream_t s[2];
  float* buf[2];
  for (int d = 0; d < 2; ++d) {
    check_cuda(cudaSetDevice(d), "cudaSetDevice");
    check_cuda(cudaStreamCreate(&s[d]), "cudaStreamCreate");
    check_cuda(cudaMalloc(&buf[d], 64 * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMemsetAsync(buf[d], 0, 64 * sizeof(float), s[d]), "memset");
  }
  ncclGroupStart();
  for (int d = 0; d < 2; ++d) ncclAllReduce(buf[d], buf[d], 64, ncclFloat, ncclSum, comms[d], s[d]);
  const ncclResult_t rc = ncclGroupEnd();
  for (int d = 0; d < 2; ++d) check_cuda(cudaStreamSynchronize(s[d]), "sync");
  report(what, rc, 0);
  for (int d = 0; d < 2; ++d) ncclCommDestroy(comms[d]);
}

int mode_inits(ncclComm_t world) {
  // Non-blocking split: returns at once, ready later.
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t nb = nullptr;
  ncclResult_t rc = ncclCommSplit(world, 0, g_rank, &nb, &cfg);
  if (rc == ncclInProgress) rc = wait_ready(nb);
  report("nonblocking_split", rc, 0);
  if (rc == ncclSuccess) reduce_on(nb, "nonblocking_reduce");

  // Shrink: every rank but the last keeps going.
  int last = g_world - 1;
  if (g_rank != last) {
    ncclComm_t shrunk = nullptr;
    rc = ncclCommShrink(world, &last, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT);
    report("shrink", rc, 0);
    if (rc == ncclSuccess) {
      reduce_on(shrunk, "shrunk_reduce");
      ncclCommDestroy(shrunk);
    }
  }

  // InitRankScalable with the launcher's id (NCCL_COMM_ID: the same on every rank).
  ncclUniqueId id;
  rc = ncclGetUniqueId(&id);
  ncclComm_t scalable = nullptr;
  if (rc == ncclSuccess) rc = ncclCommInitRankScalable(&scalable, g_world, g_rank, 1, &id, nullptr);
  report("scalable", rc, 0);
  if (rc == ncclSuccess) {
    reduce_on(scalable, "scalable_reduce");
    ncclCommDestroy(scalable);
  }

  // Two members per process of one communicator from one unique id, initialized in one
  // group on devices 0 and 1 (nccl-tests -g 2; one process per node).
  ncclComm_t pair[2] = {nullptr, nullptr};
  if (ncclGetUniqueId(&id) == ncclSuccess) {
    ncclGroupStart();
    for (int d = 0; d < 2; ++d) {
      check_cuda(cudaSetDevice(d), "cudaSetDevice");
      ncclCommInitRank(&pair[d], 2 * g_world, id, 2 * g_rank + d);
    }
    rc = ncclGroupEnd();
    report("two_per_process", rc, 0);
    if (rc == ncclSuccess) reduce_on_both(pair, "two_per_process_reduce");
  }

  // InitAll: a private 2-GPU communicator in each process, driven as one group.
  int devs[2] = {0, 1};
  ncclComm_t local[2] = {nullptr, nullptr};
  rc = ncclCommInitAll(local, 2, devs);
  report("init_all", rc, 0);
  if (rc == ncclSuccess) reduce_on_both(local, "init_all_reduce");
  if (nb != nullptr) ncclCommDestroy(nb);
  return 0;
}

int mode_graph(ncclComm_t comm, int ops, int launches) {
  cudaStream_t busy, s;
  check_cuda(cudaStreamCreate(&busy), "cudaStreamCreate");
  check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  Buffers early(4096), b(257);
  early.fill(busy);
  b.fill(s);
  // An all-reduce still running while this thread captures (it waits behind 300 ms of
  // host work on its stream): a tracer polling its completion must not break the capture.
  check_cuda(cudaLaunchHostFunc(
                 busy, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); },
                 nullptr),
             "cudaLaunchHostFunc");
  report("early", ncclAllReduce(early.send, early.recv, 4096, ncclFloat, ncclSum, comm, busy), 0);
  check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  ncclResult_t captured = ncclSuccess;
  for (int i = 0; i < ops; ++i) {
    const ncclResult_t rc = ncclAllReduce(b.send, b.recv, 257, ncclFloat, ncclSum, comm, s);
    if (captured == ncclSuccess) captured = rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // host work during capture
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  report("captured", captured, static_cast<double>(end));
  report("early_done", ncclSuccess, early.sum(busy, 4096));
  if (end != cudaSuccess) return 1;
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  for (int l = 0; l < launches; ++l) check_cuda(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
  report("graph", ncclSuccess, b.sum(s, 257));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 0;
}

int mode_ops(ncclComm_t comm) {
  cudaStream_t s;
  check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  const size_t n = 1000 + 3;  // odd count
  Buffers b(n);
  auto run = [&](const char* what, size_t out_count, auto&& call) {
    b.fill(s);
    const ncclResult_t rc = call();
    cudaStreamSynchronize(s);
    report(what, rc, rc == ncclSuccess ? b.sum(s, out_count) : 0.0);
  };
  run("all_reduce", n,
      [&] { return ncclAllReduce(b.send, b.recv, n, ncclFloat, ncclSum, comm, s); });
  run("all_reduce_max", n,
      [&] { return ncclAllReduce(b.send, b.recv, n, ncclFloat, ncclMax, comm, s); });
  run("broadcast", n,
      [&] { return ncclBroadcast(b.send, b.recv, n, ncclFloat, 1 % g_world, comm, s); });
  run("bcast", n, [&] { return ncclBcast(b.recv, n, ncclFloat, 0, comm, s); });
  run("reduce", n, [&] { return ncclReduce(b.send, b.recv, n, ncclFloat, ncclSum, 0, comm, s); });
  run("all_gather", n * g_world,
      [&] { return ncclAllGather(b.send, b.recv, n, ncclFloat, comm, s); });
  run("reduce_scatter", n,
      [&] { return ncclReduceScatter(b.send, b.recv, n, ncclFloat, ncclSum, comm, s); });
  run("all_to_all", n * g_world,
      [&] { return ncclAlltoAll(b.send, b.recv, n, ncclFloat, comm, s); });
  run("gather", g_rank == 0 ? n * g_world : 0,
      [&] { return ncclGather(b.send, b.recv, n, ncclFloat, 0, comm, s); });
  run("scatter", n, [&] { return ncclScatter(b.send, b.recv, n, ncclFloat, 0, comm, s); });
  run("all_reduce_in_place", n,
      [&] { return ncclAllReduce(b.recv, b.recv, n, ncclFloat, ncclSum, comm, s); });
  run("sendrecv_ring", n, [&] {
    ncclGroupStart();
    ncclSend(b.send, n, ncclFloat, (g_rank + 1) % g_world, comm, s);
    ncclRecv(b.recv, n, ncclFloat, (g_rank + g_world - 1) % g_world, comm, s);
    return ncclGroupEnd();
  });
  run("grouped_all_reduces", n, [&] {
    ncclGroupStart();
    ncclAllReduce(b.send, b.recv, n / 2, ncclFloat, ncclSum, comm, s);
    ncclAllReduce(b.send + n / 2, b.recv + n / 2, n - n / 2, ncclFloat, ncclSum, comm, s);
    return ncclGroupEnd();
  });
  // Error returns must come back unchanged.
  run("bad_dtype", 0, [&] {
    return ncclAllReduce(b.send, b.recv, n, static_cast<ncclDataType_t>(99), ncclSum, comm, s);
  });
  run("bad_peer", 0, [&] { return ncclSend(b.send, n, ncclFloat, g_world + 5, comm, s); });
  run("null_comm", 0,
      [&] { return ncclAllReduce(b.send, b.recv, n, ncclFloat, ncclSum, nullptr, s); });

  ncclComm_t half = nullptr;
  ncclResult_t rc = ncclCommSplit(comm, g_rank % 2, g_rank, &half, nullptr);
  report("split", rc, 0);
  if (rc == ncclSuccess && half != nullptr) {
    int count = 0;
    ncclCommCount(half, &count);
    run("split_all_reduce", n,
        [&] { return ncclAllReduce(b.send, b.recv, n, ncclFloat, ncclSum, half, s); });
    report("split_size", ncclSuccess, count);
    ncclCommDestroy(half);
  }
  ncclResult_t async = ncclSuccess;
  rc = ncclCommGetAsyncError(comm, &async);
  report("async_error", rc, async);
  int version = 0;
  report("version", ncclGetVersion(&version), version > 0 ? 1 : 0);
  cudaStreamDestroy(s);
  return 0;
}

// `ops` all-reduces, then the process dies of `sig` the way a crash does.
int mode_crash(ncclComm_t comm, int ops, int sig) {
  cudaStream_t s;
  check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  Buffers b(256);
  b.fill(s);
  for (int i = 0; i < ops; ++i) {
    ncclAllReduce(b.send, b.recv, 256, ncclFloat, ncclSum, comm, s);
    check_cuda(cudaStreamSynchronize(s), "sync");
  }
  if (sig == SIGABRT) std::abort();
  raise(sig);
  return 3;  // not reached: the signal's default action ends the process
}

int mode_loop(ncclComm_t comm, long ready_after, long hang_rank, long hang_before,
              long per_group = 1) {
  cudaStream_t s;
  check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  Buffers b(256);
  b.fill(s);
  for (long i = 0;; ++i) {
    if (i == ready_after) {
      std::printf("r%d ready %ld\n", g_rank, i);
      std::fflush(stdout);
    }
    if (g_rank == hang_rank && i == hang_before) {
      std::printf("r%d stopping before op %ld\n", g_rank, i);
      std::fflush(stdout);
      for (;;) pause();
    }
    if (per_group > 1) ncclGroupStart();
    for (long k = 0; k < per_group; ++k)
      ncclAllReduce(b.send, b.recv, 256, ncclFloat, ncclSum, comm, s);
    if (per_group > 1) ncclGroupEnd();
    check_cuda(cudaStreamSynchronize(s), "sync");
  }
}

int mode_threads(ncclComm_t comm, int threads, int ops) {
  std::vector<ncclComm_t> comms(threads);
  for (int t = 0; t < threads; ++t) {
    if (ncclCommSplit(comm, 0, g_rank, &comms[t], nullptr) != ncclSuccess) return 4;
  }
  int device = 0;
  cudaGetDevice(&device);
  std::vector<std::thread> workers;
  std::vector<double> sums(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      cudaSetDevice(device);
      cudaStream_t s;
      check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
      Buffers b(64);
      b.fill(s);
      for (int i = 0; i < ops; ++i)
        ncclAllReduce(b.send, b.recv, 64, ncclFloat, ncclSum, comms[t], s);
      sums[t] = b.sum(s, 64);
      cudaStreamDestroy(s);
    });
  }
  for (auto& w : workers) w.join();
  for (int t = 0; t < threads; ++t) {
    report(("thread" + std::to_string(t)).c_str(), ncclSuccess, sums[t]);
    ncclCommDestroy(comms[t]);
  }
  return 0;
}

// K all-reduces of `b` on `s`.
void all_reduces(ncclComm_t comm, Buffers& b, cudaStream_t s, int ops) {
  for (int i = 0; i < ops; ++i) ncclAllReduce(b.send, b.recv, 64, ncclFloat, ncclSum, comm, s);
}

// A new stream on which `b` was filled and K all-reduces finished, with stdout
// flushed: the state before a fork.
cudaStream_t settled_stream(ncclComm_t comm, Buffers& b, int ops) {
  cudaStream_t s;
  check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  b.fill(s);
  all_reduces(comm, b, s, ops);
  cudaStreamSynchronize(s);
  std::fflush(stdout);
  return s;
}

// Forks `forks` children one after another; returns how many did not exit 0.
int fork_children(int forks) {
  int failures = 0;
  for (int f = 0; f < forks; ++f) {
    const pid_t child = fork();
    if (child == 0) {
      int v = 0;
      ncclGetVersion(&v);        // goes straight to NCCL in the child
      std::exit(v > 0 ? 0 : 5);  // runs exit handlers: must not touch the parent's trace
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures;
}

// K ops, then F rounds of: forks (from T threads at once when T > 1), K ops.
int mode_fork(ncclComm_t comm, int ops, int forks, int threads) {
  Buffers b(64);
  cudaStream_t s = settled_stream(comm, b, ops);
  int failures = 0;
  for (int f = 0; f < forks; ++f) {
    if (threads <= 1) {
      failures += fork_children(1);
    } else {
      std::vector<std::thread> forkers;
      std::vector<int> failed(static_cast<size_t>(threads), 0);
      for (int t = 0; t < threads; ++t)
        forkers.emplace_back([&failed, t] { failed[static_cast<size_t>(t)] = fork_children(1); });
      for (auto& th : forkers) th.join();
      for (int n : failed) failures += n;
    }
    all_reduces(comm, b, s, ops);
  }
  report("children_failed", ncclSuccess, failures);
  report("after_fork", ncclSuccess, b.sum(s, 64));
  return 0;
}

// A child that has not exited after this long is stuck (it never will).
constexpr auto kChildPatience = std::chrono::seconds(30);

// Waits for `child` (bounded); kills it if stuck.  0 = exited 0, 1 = failed, 2 = stuck.
int reap(pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + kChildPatience;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

// The probe's writer thread held inside HDF5, as a writer stuck in slow I/O
// would be: pwrite() below comes first for every library in the process, and
// HDF5 writes through it with its global lock held.  0 off, 1 armed, 2 writer
// held, 3 released.
std::atomic<int> g_writer_trap{0};

// K ops; then the probe's writer is held inside HDF5 while F children are
// forked and exit through exit() (exit handlers run); K ops.  A child that
// enters HDF5 would wait forever for the lock the writer holds.
int mode_fork_writer_stuck(ncclComm_t comm, int ops, int forks) {
  Buffers b(64);
  cudaStream_t s = settled_stream(comm, b, ops);
  g_writer_trap.store(1);
  // The writer writes at its next flush; without the probe nothing is caught.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (g_writer_trap.load() != 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool held = g_writer_trap.load() == 2;
  int failed = 0;
  int stuck = 0;
  for (int f = 0; held && f < forks; ++f) {
    const pid_t child = fork();
    if (child == 0) std::exit(0);
    const int r = reap(child);
    failed += r == 1;
    stuck += r == 2;
  }
  g_writer_trap.store(3);
  all_reduces(comm, b, s, ops);
  report("writer_held", ncclSuccess, held ? 1 : 0);
  report("children_failed", ncclSuccess, failed);
  report("children_stuck", ncclSuccess, stuck);
  report("after_fork", ncclSuccess, b.sum(s, 64));
  return 0;
}

// K ops; then a child writes an HDF5 file of its own and exits through exit()
// without closing it: HDF5's exit-time shutdown closes it, probe or not.  The
// parent reads the file back.
int mode_fork_child_hdf5(ncclComm_t comm, int ops, const char* path) {
  Buffers b(64);
  cudaStream_t s = settled_stream(comm, b, ops);
  const int values[4] = {1, 2, 3, 4};
  const pid_t child = fork();
  if (child == 0) {
    const hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[1] = {4};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t data =
        H5Dcreate2(file, "values", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const bool ok = file >= 0 && data >= 0 &&
                    H5Dwrite(data, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0;
    std::exit(ok ? 0 : 5);  // nothing closed
  }
  const int r = reap(child);
  double sum = -1;
  const hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t data = file >= 0 ? H5Dopen2(file, "values", H5P_DEFAULT) : -1;
  int read_back[4] = {0, 0, 0, 0};
  if (data >= 0 && H5Dread(data, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, read_back) >= 0)
    sum = read_back[0] + read_back[1] + read_back[2] + read_back[3];
  if (data >= 0) H5Dclose(data);
  if (file >= 0) H5Fclose(file);
  all_reduces(comm, b, s, ops);
  report("child_exit", ncclSuccess, r);
  report("child_file", ncclSuccess, sum);
  report("after_fork", ncclSuccess, b.sum(s, 64));
  return 0;
}

}  // namespace

// Only the probe's writer thread is ever held (mode_fork_writer_stuck); every
// other call, and every call when the trap is off, writes at once.
extern "C" ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  const int trap = g_writer_trap.load();
  if (trap == 1 || trap == 2) {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (std::strcmp(name, "ringside-writer") == 0) {
      g_writer_trap.store(2);
      while (g_writer_trap.load() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return static_cast<ssize_t>(syscall(SYS_pwrite64, fd, buf, count, offset));
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: probe_test_app init|inits|graph K L|ops|loop N|hang R N [G]|threads T K|fork "
        "K [F [T]]|crash K SIG|fork_writer_stuck K F|fork_child_hdf5 K PATH\n");
    return 2;
  }
  g_rank = env_int("RANK", 0);
  g_world = env_int("WORLD_SIZE", 1);
  const std::string mode = argv[1];
  auto arg = [&](int i, long fallback) { return argc > i ? std::atol(argv[i]) : fallback; };
  ncclComm_t comm = init_world();
  int rc = 2;
  if (mode == "init")
    rc = 0;
  else if (mode == "inits")
    rc = mode_inits(comm);
  else if (mode == "graph")
    rc = mode_graph(comm, static_cast<int>(arg(2, 3)), static_cast<int>(arg(3, 2)));
  else if (mode == "ops")
    rc = mode_ops(comm);
  else if (mode == "loop")
    rc = mode_loop(comm, arg(2, 10), -1, -1);
  else if (mode == "hang")
    rc = mode_loop(comm, -1, arg(2, 0), arg(3, 5), arg(4, 1));
  else if (mode == "threads")
    rc = mode_threads(comm, static_cast<int>(arg(2, 4)), static_cast<int>(arg(3, 20)));
  else if (mode == "crash")
    rc = mode_crash(comm, static_cast<int>(arg(2, 10)), static_cast<int>(arg(3, SIGABRT)));
  else if (mode == "fork_writer_stuck")
    rc = mode_fork_writer_stuck(comm, static_cast<int>(arg(2, 5)), static_cast<int>(arg(3, 2)));
  else if (mode == "fork_child_hdf5" && argc > 3)
    rc = mode_fork_child_hdf5(comm, static_cast<int>(arg(2, 5)), argv[3]);
  else if (mode == "fork")
    rc = mode_fork(comm, static_cast<int>(arg(2, 10)), static_cast<int>(arg(3, 1)),
                   static_cast<int>(arg(4, 1)));
  else
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  ncclCommDestroy(comm);
  return rc;
}
