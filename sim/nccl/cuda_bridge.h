// The few sim-core (libcuda.so.1 stand-in) functions this library uses, resolved
// at run time so that loading the sim's libnccl.so.2 next to a real libcuda fails
// with a clear message instead of an unresolved symbol. See sim/core/sim_internal.h.
#pragma once

#include <nccl.h>

namespace ringside::sim::nccl {

using StreamTask = void (*)(void*);

// Enqueues fn(arg) on the application's stream without slow_gpu stretching (the
// NCCL op applies the factor to its transfer time itself, not to time spent waiting).
ncclResult_t stream_enqueue(cudaStream_t stream, StreamTask fn, void* arg);
// The `stall` fault: the device hangs once it has run everything enqueued so far
// (an event record enqueued next still completes; see RINGSIM_TASK_STALL_GATE).
ncclResult_t stream_stall_after_queued(cudaStream_t stream);
// True while `stream` is being captured into a CUDA graph.
bool stream_capturing(cudaStream_t stream);
// The device the calling thread has made current (0 if none).
int current_device();
// The node-local GPU index of a CUDA device ordinal.
int device_local_gpu(int device);
// The slow_gpu factor of a device of this process.
double device_slow_factor(int device);

// Device memory from the sim's libcuda (cuMemAlloc/cuMemFree), for ncclMemAlloc.
ncclResult_t device_alloc(void** ptr, size_t size);
ncclResult_t device_free(void* ptr);

}  // namespace ringside::sim::nccl
