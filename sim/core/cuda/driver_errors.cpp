// Driver API: error names and descriptions (our wording), cuGetProcAddress.
#include <cstring>
#include <string>

#include <dlfcn.h>

#include <cuda.h>

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

// The codes the sim returns plus the common ones applications test for.
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error (cuInit was not called)"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported (not implemented by the ringside sim)"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* find(CUresult code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace

extern "C" {

CUresult cuGetErrorString(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find(error);
  *str = e != nullptr ? e->text : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = find(error);
  *str = e != nullptr ? e->name : nullptr;
  return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Looks the symbol up in this library. A few entry points changed signature in a _vN
// version; callers get the version matching the CUDA version they were built for. For the
// others the _v2 name only widened types long ago and is always preferred.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  struct Versioned {
    const char* name;
    int since;
    const char* suffix;
  };
  static constexpr Versioned kChanged[] = {
      {"cuStreamGetCaptureInfo", 12030, "_v3"}, {"cuStreamGetCaptureInfo", 11030, "_v2"},
      {"cuStreamGetCtx", 12050, "_v2"},         {"cuCtxGetDevice", 13000, "_v2"},
      {"cuCtxSynchronize", 13000, "_v2"},
  };
  std::string base = symbol;
  std::string chosen = base + "_v2";
  bool changed = false;
  for (const Versioned& v : kChanged) {
    if (base != v.name) continue;
    if (!changed) chosen = base;
    changed = true;
    if (cuda_version >= v.since && chosen == base) chosen = base + v.suffix;
  }
  Dl_info info;
  void* self = nullptr;
  if (dladdr(reinterpret_cast<void*>(&cuGetProcAddress_v2), &info) != 0)
    self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  void* found = nullptr;
  if (self != nullptr) {
    std::string candidates[] = {chosen, base};
    bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    for (const std::string& c : candidates) {
      if (found == nullptr && per_thread) found = dlsym(self, (c + "_ptsz").c_str());
      if (found == nullptr && per_thread) found = dlsym(self, (c + "_ptds").c_str());
      if (found == nullptr) found = dlsym(self, c.c_str());
    }
    dlclose(self);
  }
  *pfn = found;
  if (status != nullptr)
    *status = found != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return found != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
