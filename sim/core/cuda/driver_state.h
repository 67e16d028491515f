// Process state shared by the driver API entry points: initialization, the calling
// thread's context stack, and resolution of stream handles (including the special ones).
#pragma once

#include <memory>

#include <cuda.h>

#include "devices.h"
#include "stream.h"

namespace ringside::sim {

bool driver_initialized();
void set_driver_initialized();

// The calling thread's current context (top of its stack); nullptr if none.
CUcontext current_context();
void set_current_context(CUcontext ctx);
CUresult push_context(CUcontext ctx);
CUresult pop_context(CUcontext* out);
bool valid_context(CUcontext ctx);

// Device of the current context; CUDA_ERROR_INVALID_CONTEXT if none.
CUresult current_device(int* device);

// Resolves a stream handle: 0 means the legacy default stream, or the per-thread one when
// called through a _ptsz/_ptds entry point; CU_STREAM_LEGACY / CU_STREAM_PER_THREAD likewise.
CUresult resolve_stream(CUstream handle, bool per_thread_api, std::shared_ptr<StreamCore>* out);

// Runs fn on the stream and waits for it (synchronous copies on the legacy stream).
CUresult run_on_stream_sync(CUstream handle, bool per_thread_api, std::function<void()> fn);

}  // namespace ringside::sim
