// The sim's private C API, exported by the stand-in libcuda.so.1 with the prefix ringsim_.
// Used by the sim's other libraries (libcudart.so.13 forwards to it; libnccl.so.2 runs its
// operations on CUDA streams through it). Applications and the probe never call it.
//
// Stream handles are the same objects as CUstream / cudaStream_t; 0 (and CU_STREAM_LEGACY)
// is the legacy default stream and CU_STREAM_PER_THREAD the calling thread's default stream,
// of the calling thread's current device. Functions return a CUresult value (0 = success).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

typedef void (*ringsim_task_fn)(void* arg);

// Task flags.
enum {
  // Do not stretch this task by the device's slow_gpu factor (e.g. time spent waiting for
  // peers). Without the flag a task's measured duration d is followed by d * (factor - 1).
  RINGSIM_TASK_NO_STRETCH = 1u << 0,
  // An event record (a timestamp marker): still runs on a stalled stream, see below.
  RINGSIM_TASK_EVENT = 1u << 1,
  // The `stall` fault: once the stream reaches this task, the device is hung.  Only the
  // next task still runs if it is an event record (so the completion of the work before
  // the hang stays observable); every other task blocks forever.
  RINGSIM_TASK_STALL_GATE = 1u << 2,
};

// Enqueues fn(arg) on the stream; it runs on the stream's worker thread after everything
// enqueued before it (and, for the legacy default stream, after prior work of blocking
// streams), exactly like a host function. Returns CUDA_ERROR_INVALID_HANDLE for a bad stream.
int ringsim_stream_enqueue(struct CUstream_st* stream, ringsim_task_fn fn, void* arg,
                           unsigned flags);

// CUDA device ordinal a stream belongs to (special handles resolve to the current device).
int ringsim_stream_device(struct CUstream_st* stream, int* device);

// The node-local GPU index (cluster model, NVML, PCI id) of a CUDA device ordinal: differs
// from the ordinal when CUDA_VISIBLE_DEVICES is set.
int ringsim_device_local_gpu(int device, int* local_gpu);

// The calling thread's current device (the current context's device; 0 if none is current).
int ringsim_current_device(int* device);

// Slow factor (>= 1) applied to the device's stream tasks (cluster file, slow_gpu).
double ringsim_device_slow_factor(int device);

// Whether `ptr` lies in memory from cuMemAlloc/cudaMalloc (1) or not (0).
int ringsim_is_device_pointer(const void* ptr);

// Nanoseconds this process kept the node-local GPU `local_gpu` busy (at least one stream
// task other than an event record running), summed over its devices on that GPU; the
// stand-in NVML's utilization.gpu comes from it.
unsigned long long ringsim_gpu_busy_ns(int local_gpu);

#ifdef __cplusplus
}
#endif
