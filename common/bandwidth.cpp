#include "ringside/bandwidth.h"

namespace ringside {

using trace::OpKind;

double bus_bw_factor(OpKind op, int nranks) {
  const double n = nranks;
  switch (op) {
    case OpKind::kAllReduce:
      return nranks > 1 ? 2.0 * (n - 1) / n : 0.0;
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kAllToAll:
    case OpKind::kGather:
    case OpKind::kScatter:
      return nranks > 1 ? (n - 1) / n : 0.0;
    case OpKind::kBroadcast:
    case OpKind::kReduce:
    case OpKind::kSend:
    case OpKind::kRecv:
      return 1.0;
    case OpKind::kUnknown:
      break;
  }
  return 0.0;
}

Bandwidth compute_bandwidth(OpKind op, uint64_t size_bytes, double seconds, int nranks) {
  Bandwidth bw;
  if (seconds <= 0) return bw;
  bw.alg_gbps = static_cast<double>(size_bytes) / 1e9 / seconds;
  bw.bus_gbps = bw.alg_gbps * bus_bw_factor(op, nranks);
  return bw;
}

uint64_t nccl_tests_size(OpKind op, uint64_t count, int dtype_bytes, int nranks) {
  const uint64_t base = count * static_cast<uint64_t>(dtype_bytes > 0 ? dtype_bytes : 0);
  switch (op) {
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
    case OpKind::kGather:
    case OpKind::kScatter:
    case OpKind::kAllToAll:
      return base * static_cast<uint64_t>(nranks > 0 ? nranks : 1);
    default:
      return base;
  }
}

// ncclDataType_t values of NCCL 2.28 (nccl.h): int8=0 uint8=1 int32=2 uint32=3
// int64=4 uint64=5 float16=6 float32=7 float64=8 bfloat16=9 fp8e4m3=10 fp8e5m2=11.
int nccl_dtype_size(int dtype) {
  static constexpr int kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  if (dtype < 0 || dtype >= static_cast<int>(sizeof kSizes / sizeof kSizes[0])) return 0;
  return kSizes[dtype];
}

const char* nccl_dtype_name(int dtype) {
  static constexpr const char* kNames[] = {"int8",   "uint8",    "int32",  "uint32",
                                           "int64",  "uint64",   "half",   "float",
                                           "double", "bfloat16", "f8e4m3", "f8e5m2"};
  if (dtype < 0 || dtype >= static_cast<int>(sizeof kNames / sizeof kNames[0])) return "unknown";
  return kNames[dtype];
}

const char* nccl_redop_name(int redop) {
  static constexpr const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  if (redop == 255) return "custom";
  if (redop < 0 || redop >= 5) return "unknown";
  return kNames[redop];
}

}  // namespace ringside
