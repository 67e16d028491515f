#include "core/world.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

#include "core/errors.h"
#include "ringside/count_text.h"

namespace ringside::bench {

namespace {

void copy_text(char* dst, size_t size, const std::string& src) {
  std::snprintf(dst, size, "%s", src.c_str());
}

// Runs `issue(i)` for every local rank inside one NCCL group, then waits for all.
template <typename F>
void grouped(Watchdog& wd, std::span<const CommStream> cs, std::string_view what,
             std::string_view context, F&& issue) {
  RINGSIDE_NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < cs.size(); ++i) issue(i);
  RINGSIDE_NCCL_WATCH(wd, cs, what, ncclGroupEnd());
  wd.wait(cs, what, context);
}

class DeviceBuffers {
 public:
  DeviceBuffers(const Watchdog& wd, std::span<const CommStream> cs, size_t bytes)
      : wd_(wd), cs_(cs), ptrs_(cs.size(), nullptr) {
    for (size_t i = 0; i < cs.size(); ++i) {
      RINGSIDE_CUDA_CHECK(cudaSetDevice(cs[i].device));
      RINGSIDE_CUDA_CHECK(cudaMalloc(&ptrs_[i], bytes > 0 ? bytes : 1));
    }
  }
  ~DeviceBuffers() {
    // After a failure the device may never finish its work, and cudaFree waits for it.
    if (wd_.failed()) return;
    for (size_t i = 0; i < ptrs_.size(); ++i) {
      if (ptrs_[i] == nullptr) continue;
      cudaSetDevice(cs_[i].device);
      cudaFree(ptrs_[i]);
    }
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  void* operator[](size_t i) const { return ptrs_[i]; }

 private:
  const Watchdog& wd_;
  std::span<const CommStream> cs_;
  std::vector<void*> ptrs_;
};

}  // namespace

std::vector<std::vector<double>> oob_allreduce(Watchdog& wd, std::span<const CommStream> cs,
                                               const std::vector<std::vector<double>>& values,
                                               ncclRedOp_t op, std::string_view context) {
  static constexpr std::string_view kWhat = "an out-of-band all_reduce";
  const size_t n = values.empty() ? 0 : values[0].size();
  DeviceBuffers buf(wd, cs, n * sizeof(double));
  for (size_t i = 0; i < cs.size(); ++i) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(cs[i].device));
    RINGSIDE_CUDA_CHECK(
        cudaMemcpy(buf[i], values[i].data(), n * sizeof(double), cudaMemcpyHostToDevice));
  }
  grouped(wd, cs, kWhat, context, [&](size_t i) {
    RINGSIDE_NCCL_WATCH(
        wd, cs, kWhat, ncclAllReduce(buf[i], buf[i], n, ncclFloat64, op, cs[i].comm, cs[i].stream));
  });
  std::vector<std::vector<double>> out(cs.size(), std::vector<double>(n));
  for (size_t i = 0; i < cs.size(); ++i) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(cs[i].device));
    RINGSIDE_CUDA_CHECK(
        cudaMemcpy(out[i].data(), buf[i], n * sizeof(double), cudaMemcpyDeviceToHost));
  }
  return out;
}

std::vector<std::byte> oob_allgather(Watchdog& wd, std::span<const CommStream> cs,
                                     const std::vector<std::vector<std::byte>>& blocks,
                                     std::string_view context) {
  static constexpr std::string_view kWhat = "an out-of-band all_gather";
  const size_t block = blocks.empty() ? 0 : blocks[0].size();
  int nranks = 1;
  RINGSIDE_NCCL_CHECK(ncclCommCount(cs[0].comm, &nranks));
  const size_t total = block * static_cast<size_t>(nranks);
  DeviceBuffers send(wd, cs, block), recv(wd, cs, total);
  for (size_t i = 0; i < cs.size(); ++i) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(cs[i].device));
    RINGSIDE_CUDA_CHECK(cudaMemcpy(send[i], blocks[i].data(), block, cudaMemcpyHostToDevice));
  }
  grouped(wd, cs, kWhat, context, [&](size_t i) {
    RINGSIDE_NCCL_WATCH(
        wd, cs, kWhat, ncclAllGather(send[i], recv[i], block, ncclUint8, cs[i].comm, cs[i].stream));
  });
  std::vector<std::byte> out(total);
  RINGSIDE_CUDA_CHECK(cudaSetDevice(cs[0].device));
  RINGSIDE_CUDA_CHECK(cudaMemcpy(out.data(), recv[0], total, cudaMemcpyDeviceToHost));
  return out;
}

void oob_barrier(Watchdog& wd, std::span<const CommStream> cs, std::string_view context) {
  std::vector<std::vector<double>> one(cs.size(), std::vector<double>(1, 1.0));
  oob_allreduce(wd, cs, one, ncclSum, context);
}

RankInfo describe_local_rank(const ProcessIdentity& id, const LocalRank& local) {
  RankInfo info;
  info.rank = local.rank;
  info.local_rank = local.local_rank;
  info.pid = static_cast<int32_t>(::getpid());
  info.device = local.cs.device;
  copy_text(info.hostname, sizeof info.hostname, id.hostname);
  copy_text(info.node, sizeof info.node, id.node);
  cudaDeviceProp prop{};
  RINGSIDE_CUDA_CHECK(cudaGetDeviceProperties(&prop, local.cs.device));
  copy_text(info.gpu_name, sizeof info.gpu_name, prop.name);
  char bus[32] = {};
  RINGSIDE_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, local.cs.device));
  copy_text(info.bus_id, sizeof info.bus_id, bus);
  std::string uuid = "GPU-";
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    auto b = static_cast<unsigned char>(prop.uuid.bytes[i]);
    if (i == 4 || i == 6 || i == 8 || i == 10) uuid.push_back('-');
    uuid.push_back(kDigits[b >> 4]);
    uuid.push_back(kDigits[b & 15]);
  }
  copy_text(info.gpu_uuid, sizeof info.gpu_uuid, uuid);
  return info;
}

World::World(const WorldOptions& options, int* argc, char*** argv)
    : watchdog_(options.timeout_seconds) {
  id_ = detect_identity(options.launcher, argc, argv);
  const int ngpus = options.gpus_per_process;
  nranks_ = id_.nprocs * ngpus;
  int device_count = 0;
  RINGSIDE_CUDA_CHECK(cudaGetDeviceCount(&device_count));
  const int first_device = id_.local_proc * ngpus;
  if (first_device + ngpus > device_count) {
    throw UsageError(
        "process " + std::to_string(id_.proc) + " (local index " + std::to_string(id_.local_proc) +
        ") needs devices " + std::to_string(first_device) + ".." +
        std::to_string(first_device + ngpus - 1) + " but " + std::to_string(device_count) +
        " are visible; start fewer processes per node or lower -t or -g");
  }
  char limit_buf[32];
  std::snprintf(limit_buf, sizeof limit_buf, "%g", watchdog_.timeout_seconds());
  const std::string limit = limit_buf;
  ncclUniqueId uid{};
  {
    // Over MPI the id comes with a broadcast that cannot be polled (the
    // rendezvous file has its own time limit).
    std::optional<Deadline> deadline;
    if (id_.mpi) {
      deadline.emplace(watchdog_.timeout_seconds(),
                       "nccl_bench: error: " + error_context() +
                           ": process 0 did not send the NCCL id (MPI_Bcast) within " + limit +
                           " s (-T); exiting with code 2",
                       2);
    }
    uid = agree_unique_id(id_, options.rendezvous);
  }
  comm_id_ = hash_unique_id(uid);
  if (!id_.job_id.empty()) {
    job_id_ = id_.job_id;
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "bench-%012llx",
                  static_cast<unsigned long long>(comm_id_ & 0xffffffffffffull));
    job_id_ = buf;
  }
  locals_.resize(static_cast<size_t>(ngpus));
  for (int g = 0; g < ngpus; ++g) {
    LocalRank& l = locals_[static_cast<size_t>(g)];
    l.rank = id_.proc * ngpus + g;
    l.local_rank = id_.local_proc * ngpus + g;
    l.cs.device = first_device + g;
    RINGSIDE_CUDA_CHECK(cudaSetDevice(l.cs.device));
    RINGSIDE_CUDA_CHECK(cudaStreamCreateWithFlags(&l.cs.stream, cudaStreamNonBlocking));
  }
  {
    // A blocking init cannot be polled: it waits for every rank to join.
    Deadline deadline(watchdog_.timeout_seconds(),
                      "nccl_bench: error: " + error_context() +
                          ": creating the NCCL communicators (ncclCommInitRank, " +
                          count_text(nranks_, "rank") + ") did not finish within " + limit +
                          " s (-T): a rank did not start, died before joining or stopped "
                          "responding; exiting with code 2",
                      2);
    // One NCCL group per block of local ranks: all of them at once, or (-p)
    // each -t thread's block from a thread of its own, concurrently.
    const size_t blocks = options.parallel_init ? static_cast<size_t>(options.threads) : 1;
    const size_t per_block = locals_.size() / blocks;
    auto init_block = [&](size_t b) {
      RINGSIDE_NCCL_CHECK(ncclGroupStart());
      for (size_t i = b * per_block; i < (b + 1) * per_block; ++i) {
        LocalRank& l = locals_[i];
        RINGSIDE_CUDA_CHECK(cudaSetDevice(l.cs.device));
        RINGSIDE_NCCL_CHECK(ncclCommInitRank(&l.cs.comm, nranks_, uid, l.rank));
      }
      RINGSIDE_NCCL_CHECK(ncclGroupEnd());
    };
    if (blocks == 1) {
      init_block(0);
    } else {
      std::vector<std::exception_ptr> errors(blocks);
      std::vector<std::thread> threads;
      for (size_t b = 0; b < blocks; ++b) {
        threads.emplace_back([&, b] {
          try {
            init_block(b);
          } catch (...) {
            errors[b] = std::current_exception();
          }
        });
      }
      for (std::thread& t : threads) t.join();
      for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
      }
    }
  }
  std::vector<int> members(static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) members[static_cast<size_t>(r)] = r;
  for (const LocalRank& l : locals_) watchdog_.add(l.cs.comm, "the world communicator", members);

  std::vector<std::vector<std::byte>> blocks;
  for (const LocalRank& l : locals_) {
    RankInfo info = describe_local_rank(id_, l);
    std::vector<std::byte> b(sizeof info);
    std::memcpy(b.data(), &info, sizeof info);
    blocks.push_back(std::move(b));
  }
  const auto cs = comm_streams();
  const std::vector<std::byte> all =
      oob_allgather(watchdog_, cs, blocks, "exchanging the ranks' descriptions");
  infos_.resize(static_cast<size_t>(nranks_));
  std::memcpy(infos_.data(), all.data(), all.size());
  watchdog_.set_rank_infos(infos_);
}

World::~World() {
  watchdog_.release_all();
  for (LocalRank& l : locals_) {
    if (l.cs.stream != nullptr) {
      cudaSetDevice(l.cs.device);
      cudaStreamDestroy(l.cs.stream);
    }
  }
  if (!watchdog_.failed()) finalize_identity(id_);
}

std::vector<CommStream> World::comm_streams(size_t first, size_t count) const {
  std::vector<CommStream> out;
  for (size_t i = first; i < locals_.size() && i - first < count; ++i) out.push_back(locals_[i].cs);
  return out;
}

}  // namespace ringside::bench
