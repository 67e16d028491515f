// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that
// the probe never links CUDA and works whatever cudart the application uses
// (static, another version).  Missing library or entry points: device timing
// and GPU identity are simply unavailable; the caller warns once.
#pragma once

#include <cuda.h>

#include <string>

namespace ringside::probe {

struct CudaDriver {
  bool loaded = false;
  std::string error;  // why not, when !loaded

  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetUuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuStreamGetCtx)(CUstream, CUcontext*) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned int) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*) = nullptr;

  // Whether everything device timing needs is present.
  bool can_time() const;
  // For the probe's own threads, which never capture: puts the calling thread in
  // thread-local capture mode, so that its event queries and waits can never
  // invalidate a CUDA graph the application is capturing on another thread (in
  // global mode they would).
  void leave_captures_alone() const;
};

// Loads once; later calls return the same table.  Never throws.
const CudaDriver& cuda_driver();

// "CUDA_ERROR_... (text)" for messages.
std::string cuda_error_text(CUresult rc);

}  // namespace ringside::probe
