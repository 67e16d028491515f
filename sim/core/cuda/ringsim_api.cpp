// The sim's private C API (sim_internal.h).
#include <cuda.h>

#include "cluster.h"
#include "device_busy.h"
#include "driver_state.h"
#include "sim_internal.h"

using namespace ringside::sim;

namespace {
// The private API may be used before the application called cuInit.
void ensure_init() {
  if (!driver_initialized()) cuInit(0);
}
}  // namespace

extern "C" {

int ringsim_stream_enqueue(CUstream_st* stream, ringsim_task_fn fn, void* arg, unsigned flags) {
  ensure_init();
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<StreamCore> s;
  if (CUresult r = resolve_stream(stream, false, &s); r != CUDA_SUCCESS) return r;
  submit(
      s, [fn, arg] { fn(arg); }, flags);
  return CUDA_SUCCESS;
}

int ringsim_stream_device(CUstream_st* stream, int* device) {
  ensure_init();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<StreamCore> s;
  if (CUresult r = resolve_stream(stream, false, &s); r != CUDA_SUCCESS) return r;
  *device = s->device();
  return CUDA_SUCCESS;
}

int ringsim_device_local_gpu(int device, int* local_gpu) {
  ensure_init();
  if (local_gpu == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  *local_gpu = devices()[static_cast<size_t>(device)].local_gpu;
  return CUDA_SUCCESS;
}

int ringsim_current_device(int* device) {
  ensure_init();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (current_device(device) != CUDA_SUCCESS) *device = 0;
  return CUDA_SUCCESS;
}

unsigned long long ringsim_gpu_busy_ns(int local_gpu) {
  unsigned long long ns = 0;
  for (const Device& d : devices()) {
    if (d.local_gpu == local_gpu) ns += device_busy_ns(d.ordinal);
  }
  return ns;
}

double ringsim_device_slow_factor(int device) {
  if (!valid_device(device)) return 1.0;
  return cluster().my_device_slow_factor(devices()[static_cast<size_t>(device)].local_gpu);
}

}  // extern "C"
