// Collective, point-to-point and group entry points: argument checks, then issue_op.
#include <nccl.h>

#include "api_export.h"
#include "comm.h"
#include "group.h"
#include "last_error.h"
#include "op.h"

using namespace ringside::sim;
using namespace ringside::sim::nccl;

namespace {

ncclResult_t resolve_reduction(Comm& comm, ncclRedOp_t redop, ncclDataType_t dtype, OpDesc* op,
                               const char* fn) {
  Reduction& r = op->reduction;
  switch (redop) {
    case ncclSum:
      r.kind = Reduction::Kind::kSum;
      return ncclSuccess;
    case ncclProd:
      r.kind = Reduction::Kind::kProd;
      return ncclSuccess;
    case ncclMax:
      r.kind = Reduction::Kind::kMax;
      return ncclSuccess;
    case ncclMin:
      r.kind = Reduction::Kind::kMin;
      return ncclSuccess;
    case ncclAvg:
      // As NCCL: integers sum then divide; floating types pre-multiply by 1/n.
      if (datatype_is_integer(dtype)) {
        r.kind = Reduction::Kind::kSumPostDiv;
        r.divisor = static_cast<uint64_t>(comm.nranks);
      } else {
        r.kind = Reduction::Kind::kPreMulSum;
        r.scalar = 1.0 / comm.nranks;
      }
      return ncclSuccess;
    default:
      break;
  }
  std::lock_guard<std::mutex> lock(comm.issue_mu);
  long idx = static_cast<long>(redop) - ncclNumOps;
  if (idx < 0 || idx >= static_cast<long>(comm.redops.size()) || !comm.redops[idx].in_use) {
    return fail(ncclInvalidArgument, std::string(fn) + ": reduction op " + std::to_string(redop) +
                                         " is neither built in nor created on this communicator");
  }
  const CustomRedOp& c = comm.redops[idx];
  if (c.dtype != dtype) {
    return fail(ncclInvalidArgument, std::string(fn) + ": reduction op " + std::to_string(redop) +
                                         " was created for " + datatype_name(c.dtype) + ", not " +
                                         datatype_name(dtype));
  }
  r.kind = Reduction::Kind::kPreMulSum;
  r.scalar = c.scalar;
  op->device_scalar = c.device_scalar;
  return ncclSuccess;
}

struct Call {
  const char* fn;
  Func func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t redop;
  int root;
  bool reduces;
  bool rooted;
};

ncclResult_t enqueue(ncclComm_t comm, const Call& call, cudaStream_t stream) {
  if (comm == nullptr || !comm->impl)
    return fail(ncclInvalidArgument, std::string(call.fn) + ": comm is NULL");
  std::shared_ptr<Comm> c = comm->impl;
  if (ncclResult_t r = c->wait_ready(); r != ncclSuccess) {
    return fail(r, std::string(call.fn) + ": the communicator's initialisation failed");
  }
  if (c->closed.load())
    return fail(ncclInvalidUsage, std::string(call.fn) + ": the communicator was finalized");
  {
    std::lock_guard<std::mutex> lock(c->link->mu);
    if (c->link->revoked)
      return fail(ncclInvalidUsage, std::string(call.fn) + ": the communicator was revoked");
  }
  if (!datatype_valid(call.dtype)) {
    return fail(ncclInvalidArgument,
                std::string(call.fn) + ": invalid datatype " + std::to_string(call.dtype));
  }
  if (call.rooted && (call.root < 0 || call.root >= c->nranks)) {
    return fail(ncclInvalidArgument,
                std::string(call.fn) + ": " +
                    (call.func == Func::kSend || call.func == Func::kRecv ? "peer " : "root ") +
                    std::to_string(call.root) + " not in [0, " + std::to_string(c->nranks) + ")");
  }
  OpDesc op;
  op.func = call.func;
  op.sendbuff = call.sendbuff;
  op.recvbuff = call.recvbuff;
  op.count = call.count;
  op.dtype = call.dtype;
  op.redop = call.reduces ? call.redop : ncclSum;
  op.root = call.rooted ? call.root : -1;
  if (call.reduces) {
    if (ncclResult_t r = resolve_reduction(*c, call.redop, call.dtype, &op, call.fn);
        r != ncclSuccess)
      return r;
  }
  if (call.count > 0) {
    const bool root_here = call.root == c->rank;
    bool need_send = true, need_recv = true;
    switch (call.func) {
      case Func::kSend:
        need_recv = false;
        break;
      case Func::kRecv:
        need_send = false;
        break;
      case Func::kReduce:
      case Func::kGather:
        need_recv = root_here;
        break;
      case Func::kScatter:
        need_send = root_here;
        break;
      case Func::kBroadcast:
        need_send = root_here;
        break;
      default:
        break;
    }
    if ((need_send && call.sendbuff == nullptr) || (need_recv && call.recvbuff == nullptr)) {
      return fail(ncclInvalidArgument, std::string(call.fn) + ": " +
                                           (need_send && !call.sendbuff ? "sendbuff" : "recvbuff") +
                                           " is NULL");
    }
  }
  return issue_op(c, op, stream);
}

}  // namespace

RINGSIM_API ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream) {
  return enqueue(
      comm,
      {"ncclAllReduce", Func::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, true, false},
      stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclAllReduce,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  return enqueue(comm,
                 {"ncclBroadcast", Func::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum,
                  root, false, true},
                 stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclBroadcast,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    int root, ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                    ncclComm_t comm, cudaStream_t stream) {
  return enqueue(
      comm,
      {"ncclBcast", Func::kBroadcast, buff, buff, count, datatype, ncclSum, root, false, true},
      stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclBcast,
                   (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                    cudaStream_t stream));

RINGSIM_API ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, ncclRedOp_t op, int root,
                                     ncclComm_t comm, cudaStream_t stream) {
  return enqueue(
      comm,
      {"ncclReduce", Func::kReduce, sendbuff, recvbuff, count, datatype, op, root, true, true},
      stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclReduce,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                        ncclDataType_t datatype, ncclComm_t comm,
                                        cudaStream_t stream) {
  return enqueue(comm,
                 {"ncclAllGather", Func::kAllGather, sendbuff, recvbuff, sendcount, datatype,
                  ncclSum, -1, false, false},
                 stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclAllGather,
                   (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                    ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                            ncclDataType_t datatype, ncclRedOp_t op,
                                            ncclComm_t comm, cudaStream_t stream) {
  return enqueue(comm,
                 {"ncclReduceScatter", Func::kReduceScatter, sendbuff, recvbuff, recvcount,
                  datatype, op, -1, true, false},
                 stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclReduceScatter,
                   (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                    ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclComm_t comm,
                                       cudaStream_t stream) {
  return enqueue(comm,
                 {"ncclAlltoAll", Func::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, -1,
                  false, false},
                 stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclAlltoAll,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  return enqueue(comm,
                 {"ncclGather", Func::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root,
                  false, true},
                 stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGather,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    int root, ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  return enqueue(comm,
                 {"ncclScatter", Func::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root,
                  false, true},
                 stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclScatter,
                   (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    int root, ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                   int peer, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(
      comm,
      {"ncclSend", Func::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer, false, true},
      stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclSend,
                   (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                    ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  return enqueue(
      comm,
      {"ncclRecv", Func::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer, false, true},
      stream);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclRecv,
                   (void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                    ncclComm_t comm, cudaStream_t stream));

RINGSIM_API ncclResult_t pncclGroupStart() {
  return group_start();
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGroupStart, ());

RINGSIM_API ncclResult_t pncclGroupEnd() {
  return group_end();
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGroupEnd, ());

// The sim has no tuning model to simulate with; saying so beats a made-up estimate.
RINGSIM_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  (void)simInfo;
  return fail(ncclInvalidUsage,
              "ncclGroupSimulateEnd is not supported by the ringside sim's libnccl.so.2");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));
