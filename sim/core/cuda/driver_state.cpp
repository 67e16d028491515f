// Driver-wide and per-thread state.
#include "driver_state.h"

#include <atomic>
#include <vector>

namespace ringside::sim {

namespace {
std::atomic<bool> g_initialized{false};
thread_local std::vector<CUcontext> t_ctx_stack;
}  // namespace

bool driver_initialized() {
  return g_initialized.load(std::memory_order_acquire);
}
void set_driver_initialized() {
  g_initialized.store(true, std::memory_order_release);
}

CUcontext current_context() {
  return t_ctx_stack.empty() ? nullptr : t_ctx_stack.back();
}

void set_current_context(CUcontext ctx) {
  // cuCtxSetCurrent replaces the top of the stack (or pops it when ctx is null).
  if (t_ctx_stack.empty()) {
    if (ctx != nullptr) t_ctx_stack.push_back(ctx);
  } else if (ctx == nullptr) {
    t_ctx_stack.pop_back();
  } else {
    t_ctx_stack.back() = ctx;
  }
}

CUresult push_context(CUcontext ctx) {
  if (!valid_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  t_ctx_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult pop_context(CUcontext* out) {
  if (t_ctx_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (out != nullptr) *out = t_ctx_stack.back();
  t_ctx_stack.pop_back();
  return CUDA_SUCCESS;
}

bool valid_context(CUcontext ctx) {
  if (ctx == nullptr) return false;
  for (Device& d : devices()) {
    if (&d.primary_ctx == ctx) return true;
  }
  return false;
}

CUresult current_device(int* device) {
  CUcontext ctx = current_context();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult resolve_stream(CUstream handle, bool per_thread_api, std::shared_ptr<StreamCore>* out) {
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    int dev = 0;
    CUresult r = current_device(&dev);
    if (r != CUDA_SUCCESS) return r;
    bool per_thread = handle == CU_STREAM_PER_THREAD || (handle == nullptr && per_thread_api);
    *out = per_thread ? per_thread_stream(dev) : legacy_stream(dev);
    return CUDA_SUCCESS;
  }
  if (handle->magic != CUstream_st::kMagic || !handle->core) return CUDA_ERROR_INVALID_HANDLE;
  *out = handle->core;
  return CUDA_SUCCESS;
}

CUresult run_on_stream_sync(CUstream handle, bool per_thread_api, std::function<void()> fn) {
  std::shared_ptr<StreamCore> s;
  CUresult r = resolve_stream(handle, per_thread_api, &s);
  if (r != CUDA_SUCCESS) return r;
  s->wait(submit(s, std::move(fn), 0));
  return CUDA_SUCCESS;
}

}  // namespace ringside::sim
