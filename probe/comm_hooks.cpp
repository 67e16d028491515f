// Communicator life cycle: ids every member agrees on, one CommRecord per
// communicator, and events for destroy / abort / revoke / async errors.
#include <unistd.h>

#include <cstring>
#include <new>
#include <vector>

#include "comm_id.h"
#include "cuda_driver.h"
#include "hooks.h"
#include "real_nccl.h"
#include "runtime.h"

namespace ringside::probe {

namespace {

using trace::CommOrigin;
using trace::EventKind;

bool failed(ncclResult_t rc) {
  return rc != ncclSuccess && rc != ncclInProgress;
}

int current_device() {
  const CudaDriver& cu = cuda_driver();
  CUdevice dev = -1;
  if (!cu.loaded || cu.cuCtxGetDevice == nullptr || cu.cuCtxGetDevice(&dev) != CUDA_SUCCESS)
    return -1;
  return static_cast<int>(dev);
}

// The first communicator names the trace file when no launcher variables do,
// and gives the file its GPU.  Called on entry, so a hang inside init still
// leaves a trace.
void note_first_comm(int rank, int nranks, int device) {
  Runtime* rt = runtime();
  if (rt == nullptr || rt->first_comm_seen.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(rt->init_mutex);
  if (rt->first_comm_seen.load(std::memory_order_relaxed)) return;
  rt->first_comm_rank = rank;
  rt->first_comm_size = nranks;
  rt->first_comm_device = device;
  rt->first_comm_seen.store(true, std::memory_order_release);
  rt->writer_wake.wake();
}

// Which communicator, of those this process creates from one unique id (`key`), an init
// on `device` makes: the ranks a process drives on several GPUs (one init per device, in a
// group or from several threads: nccl-tests -g/-t, one process per node) are members of
// one; an init on a device that already has a member of the latest one starts the next.
uint32_t next_use(uint64_t key, int device) {
  Runtime* rt = runtime();
  std::lock_guard<std::mutex> lock(rt->init_mutex);
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
  auto [it, first] = rt->unique_id_uses.try_emplace(key);
  auto& u = it->second;
  if (!first && (bit == 0 || (u.devices & bit) != 0)) {
    ++u.use;
    u.devices = 0;
  }
  u.devices |= bit;
  return u.use;
}

void queue_comm_record(CommState* cs) {
  Runtime* rt = runtime();
  bool expected = false;
  if (!cs->described.compare_exchange_strong(expected, true)) return;
  trace::CommRecord c{};
  c.t_ns = cs->t_created_ns;
  c.comm_id = cs->id;
  c.parent_id = cs->parent_id;
  c.color = cs->color;
  c.key = cs->key;
  c.ordinal = cs->ordinal;
  c.nranks = cs->nranks.load();
  c.rank = cs->rank.load();
  c.device = cs->device.load();
  c.origin = static_cast<uint8_t>(cs->origin);
  if (c.device >= 0 && c.device < 64) rt->device_mask.fetch_or(uint64_t{1} << c.device);
  if (!rt->comms.push(c)) rt->probe_errors.fetch_add(1);
}

// Asks NCCL for what the arguments did not say (split results, devices).
void query_comm(CommState* cs, ncclComm_t comm) {
  int v = -1;
  if (cs->nranks.load() < 0 && real_nccl().CommCount &&
      real_nccl().CommCount(comm, &v) == ncclSuccess) {
    cs->nranks.store(v);
  }
  if (cs->rank.load() < 0 && real_nccl().CommUserRank &&
      real_nccl().CommUserRank(comm, &v) == ncclSuccess) {
    cs->rank.store(v);
  }
  if (cs->device.load() < 0 && real_nccl().CommCuDevice &&
      real_nccl().CommCuDevice(comm, &v) == ncclSuccess) {
    cs->device.store(v);
  }
  const int n = cs->nranks.load();
  if (n > 0 && cs->p2p_seq.load() == nullptr) {
    auto* seqs = new (std::nothrow) std::atomic<uint32_t>[2 * static_cast<size_t>(n)]();
    std::atomic<uint32_t>* none = nullptr;
    if (seqs != nullptr && !cs->p2p_seq.compare_exchange_strong(none, seqs)) delete[] seqs;
  }
}

struct NewComm {
  uint64_t id;
  CommOrigin origin;
  uint64_t parent_id = 0;
  int32_t color = -1;
  int32_t key = -1;
  uint32_t ordinal = 0;
  int nranks = -1;
  int rank = -1;
  int device = -1;
};

void register_comm(ncclComm_t comm, const NewComm& n) {
  Runtime* rt = runtime();
  if (comm == nullptr || rt == nullptr) return;
  auto* cs = new (std::nothrow) CommState();
  if (cs == nullptr) {
    rt->probe_errors.fetch_add(1);
    return;
  }
  cs->id = n.id;
  cs->origin = n.origin;
  cs->parent_id = n.parent_id;
  cs->color = n.color;
  cs->key = n.key;
  cs->ordinal = n.ordinal;
  cs->nranks.store(n.nranks);
  cs->rank.store(n.rank);
  cs->device.store(n.device);
  cs->t_created_ns = now_ns() - rt->meta.clock_monotonic_ns;
  query_comm(cs, comm);
  if (!rt->registry.insert(comm, cs)) {
    rt->probe_errors.fetch_add(1);
    emit_event(EventKind::kError, n.id, 0, 0, -1, "communicator table full; comm untracked");
    return;
  }
  if (cs->nranks.load() > 0 && cs->rank.load() >= 0) queue_comm_record(cs);
}

void end_comm(ncclComm_t comm, EventKind kind, ncclResult_t rc, const char* what) {
  Runtime* rt = runtime();
  CommState* cs = rt != nullptr ? rt->registry.find(comm) : nullptr;
  if (cs == nullptr) return;
  if (kind != EventKind::kWarning) {
    if (kind == EventKind::kCommAbort) cs->aborted.store(true, std::memory_order_relaxed);
    cs->ended_ns.store(now_ns());
    cs->ended.store(true, std::memory_order_release);
  }
  emit_event(kind, cs->id, cs->coll_seq.load(), rc, cs->device.load(),
             "%s returned %d after %llu ops", what, static_cast<int>(rc),
             static_cast<unsigned long long>(cs->coll_seq.load()));
  if (kind == EventKind::kCommAbort) request_flush();
}

}  // namespace

CommState* adopt_unknown_comm(ncclComm_t comm) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr || comm == nullptr) return nullptr;
  try {
    {
      std::lock_guard<std::mutex> lock(rt->init_mutex);
      if (CommState* cs = rt->registry.find(comm)) return cs;
    }
    // Not seen created (e.g. made inside NCCL): an id local to this process.
    NewComm n{hash_bytes(&comm, sizeof comm, static_cast<uint64_t>(rt->pid)),
              CommOrigin::kInitRank};
    register_comm(comm, n);
    CommState* cs = rt->registry.find(comm);
    if (cs != nullptr) {
      emit_event(EventKind::kWarning, cs->id, 0, 0, cs->device.load(),
                 "op on a communicator created unseen; its id is local to this rank");
    }
    return cs;
  } catch (...) {
    rt->probe_errors.fetch_add(1);
    return nullptr;
  }
}

void describe_comm_if_needed(CommState* cs, ncclComm_t comm) noexcept {
  query_comm(cs, comm);
  if (cs->nranks.load() > 0 && cs->rank.load() >= 0) queue_comm_record(cs);
}

namespace hooks {

namespace {

ncclResult_t init_from_unique_id(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                                 const auto& call_real) {
  const int device = current_device();
  note_first_comm(rank, nranks, device);
  uint32_t use = 0;
  try {
    use = next_use(hash_bytes(id.internal, sizeof id.internal), device);
  } catch (...) {
  }
  const ncclResult_t rc = call_real();
  if (!failed(rc) && comm != nullptr) {
    try {
      register_comm(*comm, NewComm{comm_id_from_unique_id(id.internal, sizeof id.internal, use),
                                   CommOrigin::kInitRank, 0, -1, -1, 0, nranks, rank, -1});
    } catch (...) {
      runtime()->probe_errors.fetch_add(1);
    }
  }
  return rc;
}

}  // namespace

ncclResult_t comm_init_rank(decltype(&pncclCommInitRank) real, ncclComm_t* comm, int nranks,
                            ncclUniqueId commId, int rank) {
  return init_from_unique_id(comm, nranks, commId, rank,
                             [&] { return real(comm, nranks, commId, rank); });
}

ncclResult_t comm_init_rank_config(decltype(&pncclCommInitRankConfig) real, ncclComm_t* comm,
                                   int nranks, ncclUniqueId commId, int rank,
                                   ncclConfig_t* config) {
  return init_from_unique_id(comm, nranks, commId, rank,
                             [&] { return real(comm, nranks, commId, rank, config); });
}

ncclResult_t comm_init_all(decltype(&pncclCommInitAll) real, ncclComm_t* comm, int ndev,
                           const int* devlist) {
  note_first_comm(0, ndev, devlist != nullptr && ndev > 0 ? devlist[0] : 0);
  const ncclResult_t rc = real(comm, ndev, devlist);
  if (failed(rc) || comm == nullptr) return rc;
  try {
    Runtime* rt = runtime();
    uint32_t ordinal = 0;
    {
      std::lock_guard<std::mutex> lock(rt->init_mutex);
      ordinal = rt->init_all_count++;
    }
    const uint64_t id = comm_id_for_init_all(rt->identity.hostname.c_str(), rt->pid, ordinal);
    for (int i = 0; i < ndev; ++i) {
      register_comm(comm[i], NewComm{id, CommOrigin::kInitAll, 0, -1, -1, ordinal, ndev, i,
                                     devlist != nullptr ? devlist[i] : i});
    }
  } catch (...) {
    runtime()->probe_errors.fetch_add(1);
  }
  return rc;
}

ncclResult_t comm_init_rank_scalable(decltype(&pncclCommInitRankScalable) real, ncclComm_t* newcomm,
                                     int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                     ncclConfig_t* config) {
  const int device = current_device();
  note_first_comm(myrank, nranks, device);
  uint64_t id = 0;
  try {
    if (commIds != nullptr && nId > 0) {
      const size_t n = static_cast<size_t>(nId);
      const uint32_t use = next_use(hash_bytes(commIds, sizeof(ncclUniqueId) * n), device);
      id = comm_id_from_unique_ids(commIds, sizeof(ncclUniqueId), n, use);
    }
  } catch (...) {
  }
  const ncclResult_t rc = real(newcomm, nranks, myrank, nId, commIds, config);
  if (!failed(rc) && newcomm != nullptr && id != 0) {
    try {
      register_comm(*newcomm,
                    NewComm{id, CommOrigin::kInitScalable, 0, -1, -1, 0, nranks, myrank, -1});
    } catch (...) {
      runtime()->probe_errors.fetch_add(1);
    }
  }
  return rc;
}

ncclResult_t comm_split(decltype(&pncclCommSplit) real, ncclComm_t comm, int color, int key,
                        ncclComm_t* newcomm, ncclConfig_t* config) {
  Runtime* rt = runtime();
  CommState* parent = rt->registry.find(comm);
  if (parent == nullptr) parent = adopt_unknown_comm(comm);
  // Every member of the parent calls split, also with NCCL_SPLIT_NOCOLOR: the ordinal agrees.
  const uint32_t ordinal = parent != nullptr ? parent->child_ordinal.fetch_add(1) : 0;
  const ncclResult_t rc = real(comm, color, key, newcomm, config);
  if (!failed(rc) && newcomm != nullptr && *newcomm != nullptr && parent != nullptr) {
    try {
      register_comm(*newcomm, NewComm{comm_id_for_split(parent->id, color, ordinal),
                                      CommOrigin::kSplit, parent->id, color, key, ordinal});
    } catch (...) {
      rt->probe_errors.fetch_add(1);
    }
  }
  return rc;
}

ncclResult_t comm_shrink(decltype(&pncclCommShrink) real, ncclComm_t comm, int* excludeRanksList,
                         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config,
                         int shrinkFlags) {
  Runtime* rt = runtime();
  CommState* parent = rt->registry.find(comm);
  if (parent == nullptr) parent = adopt_unknown_comm(comm);
  const uint32_t ordinal = parent != nullptr ? parent->child_ordinal.fetch_add(1) : 0;
  uint64_t id = 0;
  try {
    std::vector<int> excluded;
    if (excludeRanksList != nullptr && excludeRanksCount > 0) {
      excluded.assign(excludeRanksList, excludeRanksList + excludeRanksCount);
    }
    if (parent != nullptr) id = comm_id_for_shrink(parent->id, ordinal, excluded);
  } catch (...) {
  }
  const ncclResult_t rc =
      real(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  if (!failed(rc) && newcomm != nullptr && *newcomm != nullptr && id != 0) {
    try {
      register_comm(*newcomm, NewComm{id, CommOrigin::kShrink, parent->id, -1, -1, ordinal});
    } catch (...) {
      rt->probe_errors.fetch_add(1);
    }
  }
  return rc;
}

ncclResult_t comm_finalize(decltype(&pncclCommFinalize) real, ncclComm_t comm) {
  const ncclResult_t rc = real(comm);
  if (failed(rc)) end_comm(comm, EventKind::kWarning, rc, "ncclCommFinalize");
  return rc;
}

ncclResult_t comm_destroy(decltype(&pncclCommDestroy) real, ncclComm_t comm) {
  const ncclResult_t rc = real(comm);
  end_comm(comm, EventKind::kCommDestroy, rc, "ncclCommDestroy");
  return rc;
}

ncclResult_t comm_abort(decltype(&pncclCommAbort) real, ncclComm_t comm) {
  // Recorded first: an abort is often the last thing a failing job does.
  end_comm(comm, EventKind::kCommAbort, ncclSuccess, "ncclCommAbort (entered)");
  return real(comm);
}

ncclResult_t comm_revoke(decltype(&pncclCommRevoke) real, ncclComm_t comm, int revokeFlags) {
  const ncclResult_t rc = real(comm, revokeFlags);
  end_comm(comm, EventKind::kCommAbort, rc, "ncclCommRevoke");
  return rc;
}

ncclResult_t comm_get_async_error(decltype(&pncclCommGetAsyncError) real, ncclComm_t comm,
                                  ncclResult_t* asyncError) {
  const ncclResult_t rc = real(comm, asyncError);
  if (rc != ncclSuccess || asyncError == nullptr || *asyncError == ncclSuccess ||
      *asyncError == ncclInProgress) {
    return rc;
  }
  Runtime* rt = runtime();
  CommState* cs = rt->registry.find(comm);
  if (cs != nullptr && cs->last_async_error.exchange(*asyncError) != *asyncError) {
    emit_event(EventKind::kAsyncError, cs->id, cs->coll_seq.load(), *asyncError, cs->device.load(),
               "ncclCommGetAsyncError reported %d", static_cast<int>(*asyncError));
    request_flush();
  }
  return rc;
}

}  // namespace hooks

}  // namespace ringside::probe
