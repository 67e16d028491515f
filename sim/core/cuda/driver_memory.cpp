// Driver API: host-backed memory, copies and memsets (synchronous ones run on the default
// stream and wait; async ones are stream tasks). Device pointers are host addresses.
#include <chrono>
#include <cstring>
#include <thread>

#include <cuda.h>

#include "cluster.h"

#include "capture.h"
#include "driver_state.h"
#include "memory.h"
#include "sim_internal.h"

using namespace ringside::sim;

namespace {

void* ptr(CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}

CUresult copy(void* dst, const void* src, size_t n, CUstream h, bool per_thread, bool async) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (n == 0) return CUDA_SUCCESS;
  if (dst == nullptr || src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Device to device: the GPU's memory sets the pace (cluster().device_copy_gbps),
  // so a copy's time follows the model whatever else the host runs.
  Allocation a, b;
  const bool d2d = find_allocation(dst, &a) && a.kind == MemKind::kDevice &&
                   find_allocation(src, &b) && b.kind == MemKind::kDevice;
  const double floor_s = d2d ? static_cast<double>(n) / (cluster().device_copy_gbps() * 1e9) : 0;
  auto fn = [dst, src, n, floor_s] {
    const auto t0 = std::chrono::steady_clock::now();
    std::memmove(dst, src, n);
    if (floor_s > 0) std::this_thread::sleep_until(t0 + std::chrono::duration<double>(floor_s));
  };
  if (!async) return run_on_stream_sync(h, per_thread, fn);
  std::shared_ptr<StreamCore> s;
  if (CUresult r = resolve_stream(h, per_thread, &s); r != CUDA_SUCCESS) return r;
  submit(s, fn, 0);
  return CUDA_SUCCESS;
}

template <typename T>
CUresult fill(CUdeviceptr dst, T value, size_t count, CUstream h, bool per_thread, bool async) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == 0) return CUDA_SUCCESS;
  if (dst == 0) return CUDA_ERROR_INVALID_VALUE;
  T* p = static_cast<T*>(ptr(dst));
  auto fn = [p, value, count] {
    if constexpr (sizeof(T) == 1) {
      std::memset(p, value, count);
    } else {
      for (size_t i = 0; i < count; ++i) p[i] = value;
    }
  };
  if (!async) return run_on_stream_sync(h, per_thread, fn);
  std::shared_ptr<StreamCore> s;
  if (CUresult r = resolve_stream(h, per_thread, &s); r != CUDA_SUCCESS) return r;
  submit(s, fn, 0);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* out, size_t bytes) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_capture_safe(); r != CUDA_SUCCESS) return r;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  const Device& d = devices()[static_cast<size_t>(dev)];
  if (device_bytes_in_use(dev) + bytes > d.total_memory) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = allocate(bytes, dev, MemKind::kDevice);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (p == 0) return CUDA_SUCCESS;
  if (CUresult r = check_capture_safe(); r != CUDA_SUCCESS) return r;
  Allocation a;
  if (!find_allocation(ptr(p), &a) || a.base != ptr(p) || a.kind != MemKind::kDevice)
    return CUDA_ERROR_INVALID_VALUE;
  synchronize_device(a.device);  // as in CUDA, freeing waits for work that may use it
  return release(ptr(p), MemKind::kDevice) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostAlloc(void** out, size_t bytes, unsigned int /*flags*/) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  (void)current_device(&dev);
  *out = allocate(bytes, dev, MemKind::kHostPinned);
  return *out == nullptr ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void** out, size_t bytes) {
  return cuMemHostAlloc(out, bytes, 0);
}

CUresult cuMemFreeHost(void* p) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return release(p, MemKind::kHostPinned) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned int flags) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  Allocation a;
  if (out == nullptr || flags != 0 || !find_allocation(p, &a) || a.kind != MemKind::kHostPinned)
    return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  *total_bytes = devices()[static_cast<size_t>(dev)].total_memory;
  size_t used = device_bytes_in_use(dev);
  *free_bytes = used > *total_bytes ? 0 : *total_bytes - used;
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr p) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Allocation a;
  if (!find_allocation(ptr(p), &a)) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) =
          a.kind == MemKind::kDevice ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = &devices()[static_cast<size_t>(a.device)].primary_ctx;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = ptr(p);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<void**>(data) = a.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = a.size;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// Copies: unified addressing, so every direction is a memmove.
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return copy(ptr(d), ptr(s), n, nullptr, false, false);
}
CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return copy(ptr(d), ptr(s), n, nullptr, true, false);
}
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) {
  return copy(ptr(d), ptr(s), n, h, false, true);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) {
  return copy(ptr(d), ptr(s), n, h, true, true);
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) {
  return copy(ptr(d), s, n, nullptr, false, false);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void* s, size_t n) {
  return copy(ptr(d), s, n, nullptr, true, false);
}
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) {
  return copy(d, ptr(s), n, nullptr, false, false);
}
CUresult cuMemcpyDtoH_v2_ptds(void* d, CUdeviceptr s, size_t n) {
  return copy(d, ptr(s), n, nullptr, true, false);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return copy(ptr(d), ptr(s), n, nullptr, false, false);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  return copy(ptr(d), ptr(s), n, nullptr, true, false);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, CUstream h) {
  return copy(ptr(d), s, n, h, false, true);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void* s, size_t n, CUstream h) {
  return copy(ptr(d), s, n, h, true, true);
}
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, CUstream h) {
  return copy(d, ptr(s), n, h, false, true);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* d, CUdeviceptr s, size_t n, CUstream h) {
  return copy(d, ptr(s), n, h, true, true);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) {
  return copy(ptr(d), ptr(s), n, h, false, true);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) {
  return copy(ptr(d), ptr(s), n, h, true, true);
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  return fill(d, v, n, nullptr, false, false);
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
  return fill(d, v, n, nullptr, true, false);
}
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  return fill(d, v, n, nullptr, false, false);
}
CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) {
  return fill(d, v, n, nullptr, true, false);
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  return fill(d, v, n, nullptr, false, false);
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) {
  return fill(d, v, n, nullptr, true, false);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h) {
  return fill(d, v, n, h, false, true);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream h) {
  return fill(d, v, n, h, true, true);
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h) {
  return fill(d, v, n, h, false, true);
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream h) {
  return fill(d, v, n, h, true, true);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h) {
  return fill(d, v, n, h, false, true);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream h) {
  return fill(d, v, n, h, true, true);
}

}  // extern "C"
