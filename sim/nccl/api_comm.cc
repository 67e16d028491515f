// Communicator lifecycle entry points: init (by unique id, config, scalable, all
// devices of a process), split, shrink, finalize, destroy, abort, revoke, queries.
#include <nccl.h>

#include <thread>

#include "api_export.h"
#include "bootstrap.h"
#include "comm.h"
#include "comm_split.h"
#include "cuda_bridge.h"
#include "group.h"
#include "last_error.h"
#include "profiler.h"

using namespace ringside::sim;
using namespace ringside::sim::nccl;

namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;

ncclResult_t check_config(const ncclConfig_t* config, const char* fn) {
  if (config == nullptr) return ncclSuccess;
  if (config->magic != kConfigMagic || config->size < offsetof(ncclConfig_t, cgaClusterSize)) {
    return fail(
        ncclInvalidArgument,
        std::string(fn) +
            ": config was not initialised with NCCL_CONFIG_INITIALIZER (bad magic or size)");
  }
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1) {
    return fail(ncclInvalidArgument, std::string(fn) + ": config->blocking must be 0 or 1, got " +
                                         std::to_string(config->blocking));
  }
  return ncclSuccess;
}

// The `stop` fault at op 0: the rank never issues its first op.
void maybe_stop_at_first_op(const Comm& comm) {
  if (const OpFault* f = cluster().op_fault(OpFaultKind::kStop, comm.global_rank, comm.comm_index);
      f && f->op == 0) {
    stop_forever(comm, 0);
  }
}

void finish_init(const std::shared_ptr<Comm>& comm, ncclResult_t r) {
  {
    std::lock_guard<std::mutex> lock(comm->init_mu);
    comm->init_state = r;
  }
  comm->init_cv.notify_all();
}

ncclResult_t create_comm(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                         const ncclConfig_t* config, int device, const char* fn) {
  if (out == nullptr) return fail(ncclInvalidArgument, std::string(fn) + ": comm pointer is NULL");
  *out = nullptr;
  if (nranks < 1)
    return fail(ncclInvalidArgument,
                std::string(fn) + ": nranks " + std::to_string(nranks) + " < 1");
  if (rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument, std::string(fn) + ": rank " + std::to_string(rank) +
                                         " not in [0, " + std::to_string(nranks) + ")");
  }
  if (ncclResult_t r = check_config(config, fn); r != ncclSuccess) return r;
  auto comm = std::make_shared<Comm>();
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device >= 0 ? device : current_device();
  comm->blocking = !(config && config->blocking == 0);
  register_new_comm(*comm);
  auto* handle = new ncclComm{comm};
  const bool async = !comm->blocking || in_group();
  if (async) {
    *out = handle;
    if (in_group()) group_add_init(comm);
    std::thread([comm, id] {
      ncclResult_t r = init_from_id(*comm, id);
      if (r == ncclSuccess) maybe_stop_at_first_op(*comm);
      finish_init(comm, r);
    }).detach();
    return comm->blocking ? ncclSuccess : ncclInProgress;
  }
  ncclResult_t r = init_from_id(*comm, id);
  finish_init(comm, r);
  if (r != ncclSuccess) {
    delete handle;
    return r;
  }
  *out = handle;
  maybe_stop_at_first_op(*comm);
  return ncclSuccess;
}

// Looks up the implementation; waits for a pending init.
ncclResult_t ready_comm(ncclComm_t comm, const char* fn, std::shared_ptr<Comm>* out) {
  if (comm == nullptr || !comm->impl)
    return fail(ncclInvalidArgument, std::string(fn) + ": comm is NULL");
  ncclResult_t r = comm->impl->wait_ready();
  if (r != ncclSuccess)
    return fail(r, std::string(fn) + ": the communicator's initialisation failed");
  *out = comm->impl;
  return ncclSuccess;
}

}  // namespace

RINGSIM_API ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  return make_unique_id(uniqueId);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));

RINGSIM_API ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                           int rank) {
  return create_comm(comm, nranks, commId, rank, nullptr, -1, "ncclCommInitRank");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommInitRank,
                   (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));

RINGSIM_API ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                                 int rank, ncclConfig_t* config) {
  return create_comm(comm, nranks, commId, rank, config, -1, "ncclCommInitRankConfig");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommInitRankConfig,
                   (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank,
                    ncclConfig_t* config));

// All ids name the same root in the sim, so the first one is enough.
RINGSIM_API ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                   int nId, ncclUniqueId* commIds,
                                                   ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return fail(ncclInvalidArgument,
                "ncclCommInitRankScalable: need nId >= 1 unique ids, got " + std::to_string(nId));
  }
  return create_comm(newcomm, nranks, commIds[0], myrank, config, -1, "ncclCommInitRankScalable");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommInitRankScalable,
                   (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                    ncclConfig_t* config));

RINGSIM_API ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr) return fail(ncclInvalidArgument, "ncclCommInitAll: comm array is NULL");
  if (ndev < 1)
    return fail(ncclInvalidArgument, "ncclCommInitAll: ndev " + std::to_string(ndev) + " < 1");
  // A private root in this process (NCCL_COMM_ID is for multi-process rendezvous).
  ncclUniqueId id;
  {
    const char* saved = std::getenv("NCCL_COMM_ID");
    std::string keep = saved ? saved : "";
    if (saved) unsetenv("NCCL_COMM_ID");
    ncclResult_t r = make_unique_id(&id);
    if (saved) setenv("NCCL_COMM_ID", keep.c_str(), 1);
    if (r != ncclSuccess) return r;
  }
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    int dev = devlist ? devlist[i] : i;
    threads.emplace_back([&, i, dev] {
      results[i] = create_comm(&comms[i], ndev, id, i, nullptr, dev, "ncclCommInitAll");
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i] != ncclSuccess) {
      for (int j = 0; j < ndev; ++j) {
        if (comms[j]) {
          comms[j]->impl->abort_now();
          delete comms[j];
          comms[j] = nullptr;
        }
      }
      return results[i];
    }
  }
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommInitAll,
                   (ncclComm_t * comms, int ndev, const int* devlist));

RINGSIM_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t* config) {
  std::shared_ptr<Comm> c;
  if (ncclResult_t r = ready_comm(comm, "ncclCommSplit", &c); r != ncclSuccess) return r;
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return fail(ncclInvalidArgument, "ncclCommSplit: color " + std::to_string(color) +
                                         " must be >= 0 or NCCL_SPLIT_NOCOLOR");
  }
  if (ncclResult_t r = check_config(config, "ncclCommSplit"); r != ncclSuccess) return r;
  std::vector<int> all(c->nranks);
  for (int i = 0; i < c->nranks; ++i) all[i] = i;
  return split_comm(*c, color, key, all, config, newcomm);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommSplit,
                   (ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                    ncclConfig_t* config));

RINGSIM_API ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                         int excludeRanksCount, ncclComm_t* newcomm,
                                         ncclConfig_t* config, int shrinkFlags) {
  std::shared_ptr<Comm> c;
  if (ncclResult_t r = ready_comm(comm, "ncclCommShrink", &c); r != ncclSuccess) return r;
  if (newcomm == nullptr) return fail(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return fail(ncclInvalidArgument, "ncclCommShrink: bad exclude list");
  }
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    return fail(ncclInvalidArgument,
                "ncclCommShrink: unknown shrinkFlags " + std::to_string(shrinkFlags));
  }
  if (ncclResult_t r = check_config(config, "ncclCommShrink"); r != ncclSuccess) return r;
  std::vector<bool> excluded(c->nranks, false);
  for (int i = 0; i < excludeRanksCount; ++i) {
    int x = excludeRanksList[i];
    if (x < 0 || x >= c->nranks) {
      return fail(ncclInvalidArgument,
                  "ncclCommShrink: excluded rank " + std::to_string(x) + " out of range");
    }
    excluded[x] = true;
  }
  if (excluded[c->rank])
    return fail(ncclInvalidArgument, "ncclCommShrink: the calling rank is in the exclude list");
  if (shrinkFlags == NCCL_SHRINK_ABORT) {
    // Ops still blocked on the parent (e.g. waiting for a dead rank) end now; the
    // control exchange below ignores the comm-wide error.
    std::lock_guard<std::mutex> lock(c->link->mu);
    c->link->revoked = true;
    c->link->cv.notify_all();
  }
  std::vector<int> survivors;
  for (int i = 0; i < c->nranks; ++i) {
    if (!excluded[i]) survivors.push_back(i);
  }
  return split_comm(*c, 0, c->rank, survivors, config, newcomm);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommShrink,
                   (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                    ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags));

RINGSIM_API ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  std::shared_ptr<Comm> c;
  if (ncclResult_t r = ready_comm(comm, "ncclCommFinalize", &c); r != ncclSuccess) return r;
  if (c->finalized.exchange(true)) return fail(ncclInvalidUsage, "ncclCommFinalize: called twice");
  c->wait_idle();
  c->close_connections();
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));

RINGSIM_API ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommDestroy: comm is NULL");
  std::shared_ptr<Comm> c = comm->impl;
  if (c->wait_ready() == ncclSuccess) {
    c->wait_idle();
    c->close_connections();
  }
  profiler::comm_finalize(*c);
  delete comm;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));

RINGSIM_API ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // NCCL accepts NULL here
  comm->impl->abort_now();
  profiler::comm_finalize(*comm->impl);
  delete comm;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommAbort, (ncclComm_t comm));

RINGSIM_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  std::shared_ptr<Comm> c;
  if (ncclResult_t r = ready_comm(comm, "ncclCommRevoke", &c); r != ncclSuccess) return r;
  if (revokeFlags != NCCL_REVOKE_DEFAULT) {
    return fail(ncclInvalidArgument, "ncclCommRevoke: revokeFlags must be NCCL_REVOKE_DEFAULT (0)");
  }
  // In-flight ops stop; the links stay up so destroy/split/shrink can still proceed.
  {
    std::lock_guard<std::mutex> lock(c->link->mu);
    c->link->revoked = true;
    c->link->cv.notify_all();
  }
  c->wait_idle();
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags));

RINGSIM_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (comm == nullptr || asyncError == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL");
  }
  *asyncError = comm->impl->async_state();
  if (*asyncError == ncclRemoteError) {
    std::lock_guard<std::mutex> lock(comm->impl->link->mu);
    fail(ncclRemoteError, comm->impl->link->error_text);
  }
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommGetAsyncError,
                   (ncclComm_t comm, ncclResult_t* asyncError));

RINGSIM_API ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr)
    return fail(ncclInvalidArgument, "ncclCommCount: comm or count is NULL");
  *count = comm->impl->nranks;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count));

RINGSIM_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) {
    return fail(ncclInvalidArgument, "ncclCommCuDevice: comm or device is NULL");
  }
  *device = comm->impl->device;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device));

RINGSIM_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr)
    return fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is NULL");
  *rank = comm->impl->rank;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank));
