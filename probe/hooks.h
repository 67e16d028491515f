// What the probe does around each interposed NCCL call.  Each hook receives
// the real function (resolved once by the generated wrapper) and the
// caller's arguments, and returns NCCL's return code unchanged.  Hooks do
// not throw: bookkeeping that may fail is caught inside them.
#pragma once

#include <nccl.h>

namespace ringside::probe::hooks {

// Forwarding only (queries, registration, memory).
template <typename Fn, typename... Args>
ncclResult_t pass_through(Fn real, Args... args) {
  return real(args...);
}

// op_hooks.cpp
ncclResult_t all_reduce(decltype(&pncclAllReduce) real, const void* sendbuff, void* recvbuff,
                        size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t broadcast(decltype(&pncclBroadcast) real, const void* sendbuff, void* recvbuff,
                       size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t bcast(decltype(&pncclBcast) real, void* buff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t reduce(decltype(&pncclReduce) real, const void* sendbuff, void* recvbuff, size_t count,
                    ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                    cudaStream_t stream);
ncclResult_t all_gather(decltype(&pncclAllGather) real, const void* sendbuff, void* recvbuff,
                        size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t reduce_scatter(decltype(&pncclReduceScatter) real, const void* sendbuff,
                            void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t all_to_all(decltype(&pncclAlltoAll) real, const void* sendbuff, void* recvbuff,
                        size_t count, ncclDataType_t datatype, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t gather(decltype(&pncclGather) real, const void* sendbuff, void* recvbuff, size_t count,
                    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t scatter(decltype(&pncclScatter) real, const void* sendbuff, void* recvbuff,
                     size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                     cudaStream_t stream);
ncclResult_t send(decltype(&pncclSend) real, const void* sendbuff, size_t count,
                  ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t recv(decltype(&pncclRecv) real, void* recvbuff, size_t count, ncclDataType_t datatype,
                  int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t group_start(decltype(&pncclGroupStart) real);
ncclResult_t group_end(decltype(&pncclGroupEnd) real);
ncclResult_t group_simulate_end(decltype(&pncclGroupSimulateEnd) real, ncclSimInfo_t* simInfo);

// comm_hooks.cpp
ncclResult_t comm_init_rank(decltype(&pncclCommInitRank) real, ncclComm_t* comm, int nranks,
                            ncclUniqueId commId, int rank);
ncclResult_t comm_init_rank_config(decltype(&pncclCommInitRankConfig) real, ncclComm_t* comm,
                                   int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t comm_init_all(decltype(&pncclCommInitAll) real, ncclComm_t* comm, int ndev,
                           const int* devlist);
ncclResult_t comm_init_rank_scalable(decltype(&pncclCommInitRankScalable) real, ncclComm_t* newcomm,
                                     int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                     ncclConfig_t* config);
ncclResult_t comm_split(decltype(&pncclCommSplit) real, ncclComm_t comm, int color, int key,
                        ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t comm_shrink(decltype(&pncclCommShrink) real, ncclComm_t comm, int* excludeRanksList,
                         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config,
                         int shrinkFlags);
ncclResult_t comm_finalize(decltype(&pncclCommFinalize) real, ncclComm_t comm);
ncclResult_t comm_destroy(decltype(&pncclCommDestroy) real, ncclComm_t comm);
ncclResult_t comm_abort(decltype(&pncclCommAbort) real, ncclComm_t comm);
ncclResult_t comm_revoke(decltype(&pncclCommRevoke) real, ncclComm_t comm, int revokeFlags);
ncclResult_t comm_get_async_error(decltype(&pncclCommGetAsyncError) real, ncclComm_t comm,
                                  ncclResult_t* asyncError);

}  // namespace ringside::probe::hooks

namespace ringside::probe {
struct CommState;
// A communicator used in an op that the probe did not see created (slow
// path, once per such communicator); nullptr if it cannot be tracked.
CommState* adopt_unknown_comm(ncclComm_t comm) noexcept;
// Fills in size/rank/device of a communicator created non-blocking, once known.
void describe_comm_if_needed(CommState* cs, ncclComm_t comm) noexcept;
}  // namespace ringside::probe
