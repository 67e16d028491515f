// Error mapping, last-error state and lazy context setup.
#include "runtime_state.h"

#include <mutex>
#include <vector>

namespace ringside::sim::rt {

namespace {
thread_local cudaError_t t_last_error = cudaSuccess;
std::mutex g_retain_mu;
std::vector<bool> g_retained(256, false);  // primary context retained once per device
}  // namespace

cudaError_t to_runtime(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:
      return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED:
      return cudaErrorInitializationError;
    case CUDA_ERROR_NO_DEVICE:
      return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE:
      return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT:
      return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE:
      return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND:
      return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY:
      return cudaErrorNotReady;
    case CUDA_ERROR_NOT_SUPPORTED:
      return cudaErrorNotSupported;
    case CUDA_ERROR_ILLEGAL_STATE:
      return cudaErrorIllegalState;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
      return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
      return cudaErrorStreamCaptureInvalidated;
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      return cudaErrorStreamCaptureWrongThread;
    default:
      return cudaErrorUnknown;
  }
}

cudaError_t finish(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last_error = e;
  return e;
}

cudaError_t take_last_error() {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t peek_last_error() {
  return t_last_error;
}

CUresult set_device(int device) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return r;
  int count = 0;
  cuDeviceGetCount(&count);
  if (count == 0) return CUDA_ERROR_NO_DEVICE;
  if (device < 0 || device >= count) return CUDA_ERROR_INVALID_DEVICE;
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_retain_mu);
    if (!g_retained[static_cast<size_t>(device)]) {
      if (CUresult r = cuDevicePrimaryCtxRetain(&ctx, device); r != CUDA_SUCCESS) return r;
      g_retained[static_cast<size_t>(device)] = true;
    }
  }
  if (ctx == nullptr) {
    // Already retained: retain/release once to obtain the handle without leaking a count.
    if (CUresult r = cuDevicePrimaryCtxRetain(&ctx, device); r != CUDA_SUCCESS) return r;
    cuDevicePrimaryCtxRelease(device);
  }
  return cuCtxSetCurrent(ctx);
}

CUresult ensure_context() {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return r;
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  return ctx != nullptr ? CUDA_SUCCESS : set_device(0);
}

}  // namespace ringside::sim::rt
