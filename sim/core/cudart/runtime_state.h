// Runtime API plumbing: every cudart entry point forwards to the sim's libcuda.so.1, so a
// cudaStream_t is a CUstream and state (devices, streams, memory) lives in one place.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace ringside::sim::rt {

cudaError_t to_runtime(CUresult r);
// Records a failure as the thread's last error (cudaErrorNotReady is not a failure) and
// returns it, so entry points end with `return finish(...)`.
cudaError_t finish(cudaError_t e);
inline cudaError_t finish(CUresult r) {
  return finish(to_runtime(r));
}
cudaError_t take_last_error();
cudaError_t peek_last_error();

// Initializes the driver and makes a primary context current on this thread if none is
// (device 0 unless cudaSetDevice chose another), like the runtime's lazy initialization.
CUresult ensure_context();
CUresult set_device(int device);

// Runtime stream handle -> driver handle for the _ptsz/_ptds entry points: 0 means the
// per-thread default stream there.
inline CUstream per_thread(cudaStream_t s) {
  return s == nullptr ? CU_STREAM_PER_THREAD : s;
}

}  // namespace ringside::sim::rt
