// Runtime API: devices, versions, device-wide synchronization.
#include <cstring>

#include "runtime_state.h"

using namespace ringside::sim::rt;

namespace {
// Fixed properties of the simulated GPU (an H100-like part), matching the driver's attributes.
void fill_properties(cudaDeviceProp* p, int dev) {
  std::memset(p, 0, sizeof *p);
  cuDeviceGetName(p->name, sizeof p->name, dev);
  CUuuid uuid;
  cuDeviceGetUuid_v2(&uuid, dev);
  std::memcpy(&p->uuid, uuid.bytes, sizeof uuid.bytes);
  cuDeviceTotalMem_v2(&p->totalGlobalMem, dev);
  auto attr = [dev](CUdevice_attribute a) {
    int v = 0;
    cuDeviceGetAttribute(&v, a, dev);
    return v;
  };
  p->major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p->minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p->multiProcessorCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p->pciBusID = attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  p->pciDeviceID = attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  p->pciDomainID = attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->sharedMemPerBlock = 48 << 10;
  p->regsPerBlock = 65536;
  p->unifiedAddressing = 1;
  p->canMapHostMemory = 1;
  p->asyncEngineCount = 1;
  p->concurrentKernels = 1;
  p->ECCEnabled = 1;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
}
}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return finish(cudaErrorInvalidValue);
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  if (CUresult r = cuDeviceGetCount(count); r != CUDA_SUCCESS) return finish(r);
  return *count == 0 ? finish(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return finish(cudaErrorInvalidValue);
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  return finish(cuCtxGetDevice(device));
}

cudaError_t cudaSetDevice(int device) {
  return finish(set_device(device));
}

cudaError_t cudaInitDevice(int device, unsigned int /*device_flags*/, unsigned int flags) {
  if (flags != 0 && flags != cudaInitDeviceFlagsAreValid) return finish(cudaErrorInvalidValue);
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  CUdevice d;
  return finish(cuDeviceGet(&d, device));
}

cudaError_t cudaSetDeviceFlags(unsigned int /*flags*/) {
  return finish(ensure_context());
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (flags == nullptr) return finish(cudaErrorInvalidValue);
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  *flags = cudaDeviceScheduleAuto;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return finish(cudaErrorInvalidValue);
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  CUdevice d;
  if (CUresult r = cuDeviceGet(&d, device); r != CUDA_SUCCESS) return finish(r);
  fill_properties(prop, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  // cudaDeviceAttr values are the driver's CUdevice_attribute values.
  return finish(cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
}

cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  return finish(cuDeviceGetPCIBusId(pci_bus_id, len, device));
}

cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* pci_bus_id) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  return finish(cuDeviceGetByPCIBusId(device, pci_bus_id));
}

cudaError_t cudaDeviceSynchronize() {
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  return finish(cuCtxSynchronize());
}

// The sim keeps no per-device state worth destroying; reset waits for outstanding work.
cudaError_t cudaDeviceReset() {
  return cudaDeviceSynchronize();
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return cudaSuccess;
}

// Host-backed memory is visible to every simulated device, so peers can always access.
cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (can == nullptr) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) return e;
  if (device < 0 || device >= count || peer < 0 || peer >= count)
    return finish(cudaErrorInvalidDevice);
  *can = device != peer ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (flags != 0) return finish(cudaErrorInvalidValue);
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) return e;
  return peer >= 0 && peer < count ? cudaSuccess : finish(cudaErrorInvalidDevice);
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuDriverGetVersion(version));
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return finish(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  return finish(cuMemGetInfo_v2(free_bytes, total_bytes));
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* status) {
  if (CUresult r = cuInit(0); r != CUDA_SUCCESS) return finish(r);
  cuuint64_t driver_flags = (flags & cudaEnablePerThreadDefaultStream) != 0
                                ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                : 0;
  CUdriverProcAddressQueryResult s = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = cuGetProcAddress_v2(symbol, fn, CUDA_VERSION, driver_flags, &s);
  if (status != nullptr)
    *status = s == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                                               : cudaDriverEntryPointSymbolNotFound;
  return r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : finish(r);  // not found is reported via status
}

}  // extern "C"
