// One NCCL operation as issued by the application, resolved enough to execute later
// on the stream's worker thread.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "datatypes.h"
#include "transport.h"

namespace ringside::sim::nccl {

enum class Func : uint8_t {
  kAllReduce = 0,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kControl,  // host-side exchanges of ncclCommSplit/Shrink, not an NCCL op
};

const char* func_name(Func f);

struct OpDesc {
  Func func = Func::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // NCCL's count argument (per-rank for gather-like ops)
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  Reduction reduction;                  // resolved at issue time (device scalars: at run time)
  const void* device_scalar = nullptr;  // ncclScalarDevice pre-mul-sum: read when the op runs
  int root = -1;                        // root for rooted collectives, peer for send/recv
  uint64_t seq = 0;                     // collective sequence, or per-peer send/recv sequence
  int64_t op_index = 0;                 // position among all ops of the comm (fault numbering)

  size_t type_size() const { return datatype_size(dtype); }
  OpSignature signature() const {
    OpSignature s;
    s.func = static_cast<uint8_t>(func == Func::kRecv ? Func::kSend : func);  // a pair matches
    s.dtype = static_cast<uint8_t>(dtype);
    s.redop = static_cast<uint8_t>(func == Func::kSend || func == Func::kRecv ? 0 : redop);
    s.root = (func == Func::kSend || func == Func::kRecv) ? -1 : root;
    s.count = count;
    return s;
  }
};

}  // namespace ringside::sim::nccl
