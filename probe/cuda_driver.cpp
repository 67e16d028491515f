#include "cuda_driver.h"

#include "ringside/dyn_lib.h"

namespace ringside::probe {

namespace {

CudaDriver load() {
  CudaDriver d;
  void* lib = open_library("libcuda.so.1", d.error);
  if (lib == nullptr) return d;
  resolve(lib, d.cuInit, {"cuInit"});
  resolve(lib, d.cuDriverGetVersion, {"cuDriverGetVersion"});
  resolve(lib, d.cuDeviceGet, {"cuDeviceGet"});
  resolve(lib, d.cuDeviceGetName, {"cuDeviceGetName"});
  resolve(lib, d.cuDeviceGetPCIBusId, {"cuDeviceGetPCIBusId"});
  resolve(lib, d.cuDeviceGetUuid, {"cuDeviceGetUuid_v2", "cuDeviceGetUuid"});
  resolve(lib, d.cuCtxGetCurrent, {"cuCtxGetCurrent"});
  resolve(lib, d.cuCtxSetCurrent, {"cuCtxSetCurrent"});
  resolve(lib, d.cuCtxGetDevice, {"cuCtxGetDevice"});
  resolve(lib, d.cuStreamGetCtx, {"cuStreamGetCtx"});
  resolve(lib, d.cuStreamIsCapturing, {"cuStreamIsCapturing"});
  resolve(lib, d.cuStreamCreate, {"cuStreamCreate"});
  resolve(lib, d.cuEventCreate, {"cuEventCreate"});
  resolve(lib, d.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  resolve(lib, d.cuEventRecord, {"cuEventRecord"});
  resolve(lib, d.cuEventQuery, {"cuEventQuery"});
  resolve(lib, d.cuEventSynchronize, {"cuEventSynchronize"});
  resolve(lib, d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  resolve(lib, d.cuGetErrorString, {"cuGetErrorString"});
  resolve(lib, d.cuThreadExchangeStreamCaptureMode, {"cuThreadExchangeStreamCaptureMode"});
  if (d.cuInit == nullptr) {
    d.error = "libcuda.so.1 has no cuInit";
    return d;
  }
  const CUresult rc = d.cuInit(0);
  if (rc != CUDA_SUCCESS) {
    d.error = "cuInit failed: " + std::to_string(static_cast<int>(rc));
    return d;
  }
  d.loaded = true;
  return d;
}

}  // namespace

bool CudaDriver::can_time() const {
  return loaded && cuStreamGetCtx && cuCtxGetCurrent && cuCtxSetCurrent && cuEventCreate &&
         cuEventDestroy && cuEventRecord && cuEventQuery && cuEventSynchronize &&
         cuEventElapsedTime && cuStreamCreate && cuStreamIsCapturing;
}

void CudaDriver::leave_captures_alone() const {
  if (!loaded || cuThreadExchangeStreamCaptureMode == nullptr) return;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  cuThreadExchangeStreamCaptureMode(&mode);
}

const CudaDriver& cuda_driver() {
  static const CudaDriver driver = load();
  return driver;
}

std::string cuda_error_text(CUresult rc) {
  const char* text = nullptr;
  const CudaDriver& d = cuda_driver();
  if (d.cuGetErrorString != nullptr) d.cuGetErrorString(rc, &text);
  return "CUresult " + std::to_string(static_cast<int>(rc)) +
         (text ? std::string(" (") + text + ")" : "");
}

}  // namespace ringside::probe
