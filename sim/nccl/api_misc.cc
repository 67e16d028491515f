// Version, error strings, memory helpers, buffer registration, custom reduction ops,
// and the parts of nccl.h the sim does not implement (each fails loudly).
#include <nccl.h>

#include <cstring>
#include <string>

#include "api_export.h"
#include "comm.h"
#include "cuda_bridge.h"
#include "datatypes.h"
#include "last_error.h"

using namespace ringside::sim;
using namespace ringside::sim::nccl;

RINGSIM_API ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclGetVersion, (int* version));

RINGSIM_API const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}
RINGSIM_WEAK_ALIAS(const char*, ncclGetErrorString, (ncclResult_t result));

RINGSIM_API const char* pncclGetLastError(ncclComm_t comm) {
  (void)comm;  // NCCL keeps one last error per process too
  thread_local std::string copy;
  copy = last_error();
  return copy.c_str();
}
RINGSIM_WEAK_ALIAS(const char*, ncclGetLastError, (ncclComm_t comm));

RINGSIM_API void pncclResetDebugInit() {}
RINGSIM_WEAK_ALIAS(void, ncclResetDebugInit, ());

RINGSIM_API ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  return device_alloc(ptr, size);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size));

RINGSIM_API ncclResult_t pncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  return device_free(ptr);
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclMemFree, (void* ptr));

// Registration only speeds up real transports; the sim hands back a token.
RINGSIM_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                           void** handle) {
  if (comm == nullptr || handle == nullptr)
    return fail(ncclInvalidArgument, "ncclCommRegister: comm or handle is NULL");
  (void)size;
  *handle = buff;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommRegister,
                   (const ncclComm_t comm, void* buff, size_t size, void** handle));

RINGSIM_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommDeregister: comm is NULL");
  (void)handle;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle));

RINGSIM_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                                 ncclWindow_t* win, int winFlags) {
  (void)comm, (void)buff, (void)size, (void)win, (void)winFlags;
  return fail(
      ncclInvalidUsage,
      "ncclCommWindowRegister (symmetric memory windows) is not supported by the ringside sim");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommWindowRegister,
                   (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));

RINGSIM_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  (void)comm, (void)win;
  return fail(
      ncclInvalidUsage,
      "ncclCommWindowDeregister (symmetric memory windows) is not supported by the ringside sim");
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

RINGSIM_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                   ncclDataType_t datatype,
                                                   ncclScalarResidence_t residence,
                                                   ncclComm_t comm) {
  if (op == nullptr || scalar == nullptr || comm == nullptr) {
    return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op, scalar or comm is NULL");
  }
  if (!datatype_valid(datatype)) {
    return fail(ncclInvalidArgument,
                "ncclRedOpCreatePreMulSum: invalid datatype " + std::to_string(datatype));
  }
  if (residence != ncclScalarHostImmediate && residence != ncclScalarDevice) {
    return fail(ncclInvalidArgument,
                "ncclRedOpCreatePreMulSum: invalid residence " + std::to_string(residence));
  }
  Comm& c = *comm->impl;
  CustomRedOp entry;
  entry.in_use = true;
  entry.dtype = datatype;
  if (residence == ncclScalarHostImmediate) {
    entry.scalar = load_scalar(scalar, datatype);
  } else {
    entry.device_scalar = scalar;  // device memory is host memory in the sim: read when the op runs
  }
  std::lock_guard<std::mutex> lock(c.issue_mu);
  size_t slot = 0;
  while (slot < c.redops.size() && c.redops[slot].in_use) ++slot;
  if (slot == c.redops.size())
    c.redops.push_back(entry);
  else
    c.redops[slot] = entry;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(slot));
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclRedOpCreatePreMulSum,
                   (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype,
                    ncclScalarResidence_t residence, ncclComm_t comm));

RINGSIM_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "ncclRedOpDestroy: comm is NULL");
  Comm& c = *comm->impl;
  std::lock_guard<std::mutex> lock(c.issue_mu);
  long idx = static_cast<long>(op) - ncclNumOps;
  if (idx < 0 || idx >= static_cast<long>(c.redops.size()) || !c.redops[idx].in_use) {
    return fail(ncclInvalidArgument,
                "ncclRedOpDestroy: op " + std::to_string(op) +
                    " was not created by ncclRedOpCreatePreMulSum on this communicator");
  }
  c.redops[idx].in_use = false;
  return ncclSuccess;
}
RINGSIM_WEAK_ALIAS(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));
