// Collectives, send/recv and group calls: each describes its arguments as an
// OpCall and runs the real function under traced().
#include "hooks.h"
#include "op_tracker.h"

namespace ringside::probe::hooks {

using trace::OpKind;

ncclResult_t all_reduce(decltype(&pncclAllReduce) real, const void* sendbuff, void* recvbuff,
                        size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                        cudaStream_t stream) {
  const OpCall call{OpKind::kAllReduce, comm, stream, sendbuff, recvbuff, count, datatype, op, -1};
  return traced(call, [&] { return real(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

ncclResult_t broadcast(decltype(&pncclBroadcast) real, const void* sendbuff, void* recvbuff,
                       size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  const OpCall call{OpKind::kBroadcast, comm, stream, sendbuff, recvbuff, count,
                    datatype,           -1,   root};
  return traced(call,
                [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t bcast(decltype(&pncclBcast) real, void* buff, size_t count, ncclDataType_t datatype,
                   int root, ncclComm_t comm, cudaStream_t stream) {
  const OpCall call{OpKind::kBroadcast, comm, stream, buff, buff, count, datatype, -1, root};
  return traced(call, [&] { return real(buff, count, datatype, root, comm, stream); });
}

ncclResult_t reduce(decltype(&pncclReduce) real, const void* sendbuff, void* recvbuff, size_t count,
                    ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                    cudaStream_t stream) {
  const OpCall call{OpKind::kReduce, comm, stream, sendbuff, recvbuff, count, datatype, op, root};
  return traced(call,
                [&] { return real(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

ncclResult_t all_gather(decltype(&pncclAllGather) real, const void* sendbuff, void* recvbuff,
                        size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,
                        cudaStream_t stream) {
  const OpCall call{OpKind::kAllGather, comm,     stream, sendbuff, recvbuff,
                    sendcount,          datatype, -1,     -1};
  return traced(call, [&] { return real(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

ncclResult_t reduce_scatter(decltype(&pncclReduceScatter) real, const void* sendbuff,
                            void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const OpCall call{
      OpKind::kReduceScatter, comm, stream, sendbuff, recvbuff, recvcount, datatype, op, -1};
  return traced(call,
                [&] { return real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

ncclResult_t all_to_all(decltype(&pncclAlltoAll) real, const void* sendbuff, void* recvbuff,
                        size_t count, ncclDataType_t datatype, ncclComm_t comm,
                        cudaStream_t stream) {
  const OpCall call{OpKind::kAllToAll, comm, stream, sendbuff, recvbuff, count, datatype, -1, -1};
  return traced(call, [&] { return real(sendbuff, recvbuff, count, datatype, comm, stream); });
}

ncclResult_t gather(decltype(&pncclGather) real, const void* sendbuff, void* recvbuff, size_t count,
                    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  const OpCall call{OpKind::kGather, comm, stream, sendbuff, recvbuff, count, datatype, -1, root};
  return traced(call,
                [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t scatter(decltype(&pncclScatter) real, const void* sendbuff, void* recvbuff,
                     size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                     cudaStream_t stream) {
  const OpCall call{OpKind::kScatter, comm, stream, sendbuff, recvbuff, count, datatype, -1, root};
  return traced(call,
                [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

ncclResult_t send(decltype(&pncclSend) real, const void* sendbuff, size_t count,
                  ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream) {
  const OpCall call{OpKind::kSend, comm, stream, sendbuff, nullptr, count, datatype, -1, peer};
  return traced(call, [&] { return real(sendbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t recv(decltype(&pncclRecv) real, void* recvbuff, size_t count, ncclDataType_t datatype,
                  int peer, ncclComm_t comm, cudaStream_t stream) {
  const OpCall call{OpKind::kRecv, comm, stream, nullptr, recvbuff, count, datatype, -1, peer};
  return traced(call, [&] { return real(recvbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t group_start(decltype(&pncclGroupStart) real) {
  const ncclResult_t rc = real();
  group_started(rc);
  return rc;
}

ncclResult_t group_end(decltype(&pncclGroupEnd) real) {
  group_ending(false);
  const ncclResult_t rc = real();
  group_ended(rc, false);
  return rc;
}

ncclResult_t group_simulate_end(decltype(&pncclGroupSimulateEnd) real, ncclSimInfo_t* simInfo) {
  group_ending(true);
  const ncclResult_t rc = real(simInfo);
  group_ended(rc, true);
  return rc;
}

}  // namespace ringside::probe::hooks
