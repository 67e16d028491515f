// Driver API: initialization, version, devices, contexts.
#include <algorithm>
#include <cstring>
#include <mutex>

#include <cuda.h>

#include "cluster.h"
#include "devices.h"
#include "capture.h"
#include "driver_state.h"
#include "sim_ids.h"

using namespace ringside::sim;

namespace {

std::mutex g_primary_mu;

CUresult check_device(CUdevice dev) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return valid_device(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

void copy_string(char* dst, int len, const std::string& src) {
  if (len <= 0) return;
  size_t n = std::min(static_cast<size_t>(len - 1), src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// Fixed properties of the simulated GPU (an H100-like part); the model name is cosmetic.
constexpr int kCcMajor = 9, kCcMinor = 0, kSmCount = 132;

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  (void)cluster();  // a bad cluster file stops the process here, with a message
  (void)devices();
  set_driver_initialized();
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = check_device(ordinal); r != CUDA_SUCCESS) return r;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  copy_string(name, len, devices()[static_cast<size_t>(dev)].name);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pci_bus_id, int len, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (pci_bus_id == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  copy_string(pci_bus_id, len, devices()[static_cast<size_t>(dev)].pci_bus_id);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pci_bus_id) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  PciAddress a;
  if (dev == nullptr || pci_bus_id == nullptr || !parse_pci_bus_id(pci_bus_id, &a))
    return CUDA_ERROR_INVALID_VALUE;
  for (const Device& d : devices()) {
    if (d.pci_domain == a.domain && d.pci_bus == a.bus && d.pci_device == a.device) {
      *dev = d.ordinal;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(uuid->bytes, devices()[static_cast<size_t>(dev)].uuid.data(), 16);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = devices()[static_cast<size_t>(dev)].total_memory;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Device& d = devices()[static_cast<size_t>(dev)];
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *value = static_cast<int>(d.pci_bus);
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
      *value = static_cast<int>(d.pci_device);
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      *value = static_cast<int>(d.pci_domain);
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = kCcMajor;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = kCcMinor;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = kSmCount;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      *value = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
      *value = 1;
      break;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(g_primary_mu);
  Device& d = devices()[static_cast<size_t>(dev)];
  ++d.primary_refcount;
  *ctx = &d.primary_ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lk(g_primary_mu);
  Device& d = devices()[static_cast<size_t>(dev)];
  if (d.primary_refcount <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  --d.primary_refcount;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(g_primary_mu);
  *flags = 0;
  *active = devices()[static_cast<size_t>(dev)].primary_refcount > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = current_context();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx != nullptr && !valid_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  set_current_context(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return push_context(ctx);
}

CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return pop_context(ctx);
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return current_device(device);
}

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (ctx == nullptr) return cuCtxGetDevice(device);
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr && !valid_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int* flags) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (current_context() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *flags = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == nullptr) ctx = current_context();
  if (!valid_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *id = static_cast<unsigned long long>(ctx->device) + 1;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult r = check_capture_safe(); r != CUDA_SUCCESS) return r;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  synchronize_device(dev);
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (ctx == nullptr) return cuCtxSynchronize();
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!valid_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult r = check_capture_safe(); r != CUDA_SUCCESS) return r;
  synchronize_device(ctx->device);
  return CUDA_SUCCESS;
}

}  // extern "C"
