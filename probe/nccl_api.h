// The one list of NCCL 2.28 entry points the probe interposes.
//
// X(name, hook, params, args): `ncclName` is exported by the probe with the
// exact prototype of nccl.h; the wrapper resolves `pncclName` (else
// `ncclName`) in the next library once and hands the real function and the
// arguments to `hooks::hook`.  Every wrapper is generated from this list by
// nccl_wrappers.cc, so they all have the same shape.  `pass_through` hooks
// only forward (registration, memory, queries): interposing them costs one
// indirect call and keeps the "whole public API" promise explicit.
//
// Not listed, so not interposed (they return no ncclResult_t and carry nothing
// worth tracing): ncclGetErrorString, ncclGetLastError, ncclResetDebugInit.
#pragma once

#include <nccl.h>

#define RINGSIDE_NCCL_API(X)                                                                       \
  /* collectives */                                                                                \
  X(AllReduce, all_reduce,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,  \
     ncclComm_t comm, cudaStream_t stream),                                                        \
    (sendbuff, recvbuff, count, datatype, op, comm, stream))                                       \
  X(Broadcast, broadcast,                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,        \
     ncclComm_t comm, cudaStream_t stream),                                                        \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                     \
  X(Bcast, bcast,                                                                                  \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                         \
    (buff, count, datatype, root, comm, stream))                                                   \
  X(Reduce, reduce,                                                                                \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,  \
     int root, ncclComm_t comm, cudaStream_t stream),                                              \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream))                                 \
  X(AllGather, all_gather,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,              \
     ncclComm_t comm, cudaStream_t stream),                                                        \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                       \
  X(ReduceScatter, reduce_scatter,                                                                 \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,              \
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                        \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))                                   \
  X(AlltoAll, all_to_all,                                                                          \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm, \
     cudaStream_t stream),                                                                         \
    (sendbuff, recvbuff, count, datatype, comm, stream))                                           \
  X(Gather, gather,                                                                                \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,        \
     ncclComm_t comm, cudaStream_t stream),                                                        \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                     \
  X(Scatter, scatter,                                                                              \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,        \
     ncclComm_t comm, cudaStream_t stream),                                                        \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                     \
  /* point to point */                                                                             \
  X(Send, send,                                                                                    \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,       \
     cudaStream_t stream),                                                                         \
    (sendbuff, count, datatype, peer, comm, stream))                                               \
  X(Recv, recv,                                                                                    \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,             \
     cudaStream_t stream),                                                                         \
    (recvbuff, count, datatype, peer, comm, stream))                                               \
  /* groups */                                                                                     \
  X(GroupStart, group_start, (), ())                                                               \
  X(GroupEnd, group_end, (), ())                                                                   \
  X(GroupSimulateEnd, group_simulate_end, (ncclSimInfo_t * simInfo), (simInfo))                    \
  /* communicator life cycle */                                                                    \
  X(GetUniqueId, pass_through, (ncclUniqueId * uniqueId), (uniqueId))                              \
  X(CommInitRank, comm_init_rank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank),  \
    (comm, nranks, commId, rank))                                                                  \
  X(CommInitRankConfig, comm_init_rank_config,                                                     \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),          \
    (comm, nranks, commId, rank, config))                                                          \
  X(CommInitAll, comm_init_all, (ncclComm_t * comm, int ndev, const int* devlist),                 \
    (comm, ndev, devlist))                                                                         \
  X(CommInitRankScalable, comm_init_rank_scalable,                                                 \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,                 \
     ncclConfig_t* config),                                                                        \
    (newcomm, nranks, myrank, nId, commIds, config))                                               \
  X(CommSplit, comm_split,                                                                         \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),              \
    (comm, color, key, newcomm, config))                                                           \
  X(CommShrink, comm_shrink,                                                                       \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,           \
     ncclConfig_t* config, int shrinkFlags),                                                       \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags))                     \
  X(CommFinalize, comm_finalize, (ncclComm_t comm), (comm))                                        \
  X(CommDestroy, comm_destroy, (ncclComm_t comm), (comm))                                          \
  X(CommAbort, comm_abort, (ncclComm_t comm), (comm))                                              \
  X(CommRevoke, comm_revoke, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags))              \
  X(CommGetAsyncError, comm_get_async_error, (ncclComm_t comm, ncclResult_t * asyncError),         \
    (comm, asyncError))                                                                            \
  /* queries, registration and memory: forwarded untouched */                                      \
  X(GetVersion, pass_through, (int* version), (version))                                           \
  X(CommCount, pass_through, (const ncclComm_t comm, int* count), (comm, count))                   \
  X(CommCuDevice, pass_through, (const ncclComm_t comm, int* device), (comm, device))              \
  X(CommUserRank, pass_through, (const ncclComm_t comm, int* rank), (comm, rank))                  \
  X(CommRegister, pass_through, (const ncclComm_t comm, void* buff, size_t size, void** handle),   \
    (comm, buff, size, handle))                                                                    \
  X(CommDeregister, pass_through, (const ncclComm_t comm, void* handle), (comm, handle))           \
  X(CommWindowRegister, pass_through,                                                              \
    (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags),                   \
    (comm, buff, size, win, winFlags))                                                             \
  X(CommWindowDeregister, pass_through, (ncclComm_t comm, ncclWindow_t win), (comm, win))          \
  X(MemAlloc, pass_through, (void** ptr, size_t size), (ptr, size))                                \
  X(MemFree, pass_through, (void* ptr), (ptr))                                                     \
  X(RedOpCreatePreMulSum, pass_through,                                                            \
    (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,     \
     ncclComm_t comm),                                                                             \
    (op, scalar, datatype, residence, comm))                                                       \
  X(RedOpDestroy, pass_through, (ncclRedOp_t op, ncclComm_t comm), (op, comm))

namespace ringside::probe {

enum class Api : int {
#define RINGSIDE_API_ENUM(name, hook, params, args) k##name,
  RINGSIDE_NCCL_API(RINGSIDE_API_ENUM)
#undef RINGSIDE_API_ENUM
      kCount
};

inline constexpr int kApiCount = static_cast<int>(Api::kCount);

// "ncclAllReduce", ... for messages.
const char* api_name(Api api);

}  // namespace ringside::probe
