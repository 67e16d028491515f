// Runtime API: memory (host-backed, via the driver).
#include "runtime_state.h"
#include "sim_internal.h"

using namespace ringside::sim::rt;

namespace {

template <typename F>
cudaError_t with_ctx(F&& f) {
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  return finish(f());
}

CUdeviceptr dptr(const void* p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** p, size_t size) {
  if (p == nullptr) return finish(cudaErrorInvalidValue);
  if (size == 0) {  // CUDA returns success and a null pointer
    *p = nullptr;
    return cudaSuccess;
  }
  return with_ctx([&] { return cuMemAlloc_v2(reinterpret_cast<CUdeviceptr*>(p), size); });
}

// Managed memory is host memory in the sim, which every device and the host can access.
cudaError_t cudaMallocManaged(void** p, size_t size, unsigned int /*flags*/) {
  return cudaMalloc(p, size);
}

cudaError_t cudaFree(void* p) {
  return with_ctx([&] { return cuMemFree_v2(dptr(p)); });
}

cudaError_t cudaMallocHost(void** p, size_t size) {
  return with_ctx([&] { return cuMemAllocHost_v2(p, size); });
}
cudaError_t cudaHostAlloc(void** p, size_t size, unsigned int flags) {
  return with_ctx([&] { return cuMemHostAlloc(p, size, flags); });
}
cudaError_t cudaFreeHost(void* p) {
  return with_ctx([&] { return cuMemFreeHost(p); });
}
cudaError_t cudaHostGetDevicePointer(void** out, void* p, unsigned int flags) {
  return with_ctx(
      [&] { return cuMemHostGetDevicePointer_v2(reinterpret_cast<CUdeviceptr*>(out), p, flags); });
}
// Pinning is meaningless for host-backed devices: any host memory is already accessible.
cudaError_t cudaHostRegister(void* p, size_t size, unsigned int /*flags*/) {
  return (p == nullptr || size == 0) ? finish(cudaErrorInvalidValue) : cudaSuccess;
}
cudaError_t cudaHostUnregister(void* p) {
  return p == nullptr ? finish(cudaErrorInvalidValue) : cudaSuccess;
}

// Stream-ordered allocation: allocate at once; the free runs when the stream reaches it.
cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t /*stream*/) {
  return cudaMalloc(p, size);
}
cudaError_t cudaMallocAsync_ptsz(void** p, size_t size, cudaStream_t /*stream*/) {
  return cudaMalloc(p, size);
}
static cudaError_t free_async(void* p, CUstream s) {
  if (p == nullptr) return cudaSuccess;
  if (!ringsim_is_device_pointer(p)) return finish(cudaErrorInvalidValue);
  return with_ctx([&] {
    return static_cast<CUresult>(ringsim_stream_enqueue(
        s, [](void* q) { cuMemFree_v2(reinterpret_cast<CUdeviceptr>(q)); }, p,
        RINGSIM_TASK_NO_STRETCH));
  });
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  return free_async(p, s);
}
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s) {
  return free_async(p, per_thread(s));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind /*kind*/) {
  return with_ctx([&] { return cuMemcpy(dptr(dst), dptr(src), n); });
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind /*kind*/) {
  return with_ctx([&] { return cuMemcpy_ptds(dptr(dst), dptr(src), n); });
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind /*kind*/,
                            cudaStream_t s) {
  return with_ctx([&] { return cuMemcpyAsync(dptr(dst), dptr(src), n, s); });
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind /*kind*/,
                                 cudaStream_t s) {
  return with_ctx([&] { return cuMemcpyAsync(dptr(dst), dptr(src), n, per_thread(s)); });
}
cudaError_t cudaMemcpyPeer(void* dst, int /*dst_device*/, const void* src, int /*src_device*/,
                           size_t n) {
  return with_ctx([&] { return cuMemcpy(dptr(dst), dptr(src), n); });
}
cudaError_t cudaMemset(void* p, int value, size_t n) {
  return with_ctx([&] { return cuMemsetD8_v2(dptr(p), static_cast<unsigned char>(value), n); });
}
cudaError_t cudaMemset_ptds(void* p, int value, size_t n) {
  return with_ctx(
      [&] { return cuMemsetD8_v2_ptds(dptr(p), static_cast<unsigned char>(value), n); });
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t s) {
  return with_ctx(
      [&] { return cuMemsetD8Async(dptr(p), static_cast<unsigned char>(value), n, s); });
}
cudaError_t cudaMemsetAsync_ptsz(void* p, int value, size_t n, cudaStream_t s) {
  return with_ctx([&] {
    return cuMemsetD8Async(dptr(p), static_cast<unsigned char>(value), n, per_thread(s));
  });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  if (attr == nullptr) return finish(cudaErrorInvalidValue);
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  unsigned type = 0;
  if (cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dptr(p)) != CUDA_SUCCESS) {
    // Unknown pointers are ordinary host memory, as CUDA reports them.
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -1;  // no device owns it
    attr->devicePointer = nullptr;
    attr->hostPointer = const_cast<void*>(p);
    return cudaSuccess;
  }
  int device = 0;
  cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr(p));
  attr->type = type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  attr->device = device;
  attr->devicePointer = const_cast<void*>(p);
  attr->hostPointer = type == CU_MEMORYTYPE_DEVICE ? nullptr : const_cast<void*>(p);
  return cudaSuccess;
}

}  // extern "C"
