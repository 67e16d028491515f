#include "cuda_bridge.h"

#include <cuda.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "last_error.h"
#include "sim_internal.h"

namespace ringside::sim::nccl {
namespace {

struct Bridge {
  decltype(&ringsim_stream_enqueue) enqueue = nullptr;
  decltype(&ringsim_current_device) current_device = nullptr;
  decltype(&ringsim_device_local_gpu) local_gpu = nullptr;
  decltype(&ringsim_device_slow_factor) slow_factor = nullptr;
  CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  int (*mem_alloc)(unsigned long long*, size_t) = nullptr;
  int (*mem_free)(unsigned long long) = nullptr;
  std::string error;
};

const Bridge& bridge() {
  static const Bridge b = [] {
    Bridge r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) {
      r.error = std::string("cannot load libcuda.so.1: ") + dlerror();
      return r;
    }
    r.enqueue = reinterpret_cast<decltype(r.enqueue)>(dlsym(lib, "ringsim_stream_enqueue"));
    r.current_device =
        reinterpret_cast<decltype(r.current_device)>(dlsym(lib, "ringsim_current_device"));
    r.local_gpu = reinterpret_cast<decltype(r.local_gpu)>(dlsym(lib, "ringsim_device_local_gpu"));
    r.slow_factor =
        reinterpret_cast<decltype(r.slow_factor)>(dlsym(lib, "ringsim_device_slow_factor"));
    r.is_capturing = reinterpret_cast<decltype(r.is_capturing)>(dlsym(lib, "cuStreamIsCapturing"));
    r.mem_alloc = reinterpret_cast<decltype(r.mem_alloc)>(dlsym(lib, "cuMemAlloc_v2"));
    r.mem_free = reinterpret_cast<decltype(r.mem_free)>(dlsym(lib, "cuMemFree_v2"));
    if (!r.enqueue || !r.current_device || !r.local_gpu || !r.slow_factor) {
      r.error =
          "the libcuda.so.1 that was loaded is not the ringside sim's (no ringsim_stream_enqueue): "
          "the sim's "
          "libnccl.so.2 only works with the sim's libcuda.so.1; put the sim lib directory first in "
          "LD_LIBRARY_PATH";
    }
    return r;
  }();
  return b;
}

}  // namespace

ncclResult_t stream_enqueue(cudaStream_t stream, StreamTask fn, void* arg) {
  const Bridge& b = bridge();
  if (!b.error.empty()) return fail(ncclSystemError, b.error);
  int rc = b.enqueue(reinterpret_cast<CUstream_st*>(stream), fn, arg, RINGSIM_TASK_NO_STRETCH);
  if (rc != 0) {
    return fail(ncclUnhandledCudaError, "cannot enqueue the operation on stream " +
                                            std::to_string(reinterpret_cast<uintptr_t>(stream)) +
                                            " (CUDA error " + std::to_string(rc) +
                                            "; is the stream valid?)");
  }
  return ncclSuccess;
}

ncclResult_t stream_stall_after_queued(cudaStream_t stream) {
  const Bridge& b = bridge();
  if (!b.error.empty()) return fail(ncclSystemError, b.error);
  const int rc = b.enqueue(
      reinterpret_cast<CUstream_st*>(stream), [](void*) {}, nullptr,
      RINGSIM_TASK_NO_STRETCH | RINGSIM_TASK_STALL_GATE);
  return rc == 0 ? ncclSuccess : fail(ncclUnhandledCudaError, "cannot stall the stream");
}

bool stream_capturing(cudaStream_t stream) {
  const Bridge& b = bridge();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return b.error.empty() && b.is_capturing != nullptr &&
         b.is_capturing(reinterpret_cast<CUstream>(stream), &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

int current_device() {
  const Bridge& b = bridge();
  int dev = 0;
  if (b.error.empty() && b.current_device(&dev) == 0) return dev;
  return 0;
}

int device_local_gpu(int device) {
  const Bridge& b = bridge();
  int gpu = device;
  if (b.error.empty() && b.local_gpu(device, &gpu) == 0) return gpu;
  return device;
}

double device_slow_factor(int device) {
  const Bridge& b = bridge();
  return b.error.empty() ? b.slow_factor(device) : 1.0;
}

ncclResult_t device_alloc(void** ptr, size_t size) {
  const Bridge& b = bridge();
  if (!b.error.empty()) return fail(ncclSystemError, b.error);
  if (!b.mem_alloc)
    return fail(ncclSystemError, "ncclMemAlloc: the sim's libcuda.so.1 has no cuMemAlloc_v2");
  unsigned long long dptr = 0;
  int rc = b.mem_alloc(&dptr, size);
  if (rc != 0)
    return fail(ncclUnhandledCudaError,
                "ncclMemAlloc: cuMemAlloc failed with CUDA error " + std::to_string(rc));
  *ptr = reinterpret_cast<void*>(dptr);
  return ncclSuccess;
}

ncclResult_t device_free(void* ptr) {
  const Bridge& b = bridge();
  if (!b.error.empty()) return fail(ncclSystemError, b.error);
  if (!b.mem_free)
    return fail(ncclSystemError, "ncclMemFree: the sim's libcuda.so.1 has no cuMemFree_v2");
  int rc = b.mem_free(reinterpret_cast<unsigned long long>(ptr));
  if (rc != 0)
    return fail(ncclUnhandledCudaError,
                "ncclMemFree: cuMemFree failed with CUDA error " + std::to_string(rc));
  return ncclSuccess;
}

}  // namespace ringside::sim::nccl
