// Runtime API: streams, events, host functions. cudaStream_t/cudaEvent_t are the driver's
// CUstream/CUevent, so these forward directly; *_ptsz twins map stream 0 to the per-thread
// default stream.
#include "runtime_state.h"

using namespace ringside::sim::rt;

namespace {

template <typename F>
cudaError_t with_ctx(F&& f) {
  if (CUresult r = ensure_context(); r != CUDA_SUCCESS) return finish(r);
  return finish(f());
}

struct CallbackArgs {
  cudaStream_t stream;
  cudaStreamCallback_t fn;
  void* data;
};

void run_callback(void* p) {
  auto* a = static_cast<CallbackArgs*>(p);
  a->fn(a->stream, cudaSuccess, a->data);
  delete a;
}

cudaError_t add_callback(cudaStream_t s, CUstream driver_stream, cudaStreamCallback_t fn,
                         void* data, unsigned flags) {
  if (fn == nullptr || flags != 0) return finish(cudaErrorInvalidValue);
  return with_ctx([&] {
    auto* args = new CallbackArgs{s, fn, data};
    CUresult r = cuLaunchHostFunc(driver_stream, run_callback, args);
    if (r != CUDA_SUCCESS) delete args;
    return r;
  });
}

cudaError_t capture_info(CUstream s, cudaStreamCaptureStatus* status, unsigned long long* id,
                         cudaGraph_t* graph, const cudaGraphNode_t** deps,
                         const cudaGraphEdgeData** edges, size_t* ndeps) {
  if (status == nullptr) return finish(cudaErrorInvalidValue);
  return with_ctx([&] {
    CUstreamCaptureStatus st;
    cuuint64_t capture_id = 0;
    CUresult r = cuStreamGetCaptureInfo(s, &st, &capture_id);
    if (r != CUDA_SUCCESS) return r;
    *status = static_cast<cudaStreamCaptureStatus>(st);
    if (id != nullptr) *id = capture_id;
    if (graph != nullptr) *graph = nullptr;
    if (deps != nullptr) *deps = nullptr;
    if (edges != nullptr) *edges = nullptr;
    if (ndeps != nullptr) *ndeps = 0;
    return CUDA_SUCCESS;
  });
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int priority) {
  return with_ctx([&] { return cuStreamCreateWithPriority(s, flags, priority); });
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  return cudaStreamCreateWithPriority(s, flags, 0);
}
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return cudaStreamCreateWithPriority(s, cudaStreamDefault, 0);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return with_ctx([&] { return cuStreamDestroy_v2(s); });
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return with_ctx([&] { return cuStreamSynchronize(s); });
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  return with_ctx([&] { return cuStreamSynchronize(per_thread(s)); });
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  return with_ctx([&] { return cuStreamQuery(s); });
}
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) {
  return with_ctx([&] { return cuStreamQuery(per_thread(s)); });
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return with_ctx([&] { return cuStreamWaitEvent(s, e, flags); });
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return with_ctx([&] { return cuStreamWaitEvent(per_thread(s), e, flags); });
}
cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* f) {
  return with_ctx([&] { return cuStreamGetFlags(s, f); });
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int* f) {
  return with_ctx([&] { return cuStreamGetFlags(per_thread(s), f); });
}
cudaError_t cudaStreamGetPriority(cudaStream_t s, int* p) {
  return with_ctx([&] { return cuStreamGetPriority(s, p); });
}
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int* p) {
  return with_ctx([&] { return cuStreamGetPriority(per_thread(s), p); });
}
cudaError_t cudaStreamGetDevice(cudaStream_t s, int* d) {
  return with_ctx([&] { return cuStreamGetDevice(s, d); });
}
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int* d) {
  return with_ctx([&] { return cuStreamGetDevice(per_thread(s), d); });
}
cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  return with_ctx([&] { return cuStreamGetId(s, id); });
}
cudaError_t cudaStreamGetId_ptsz(cudaStream_t s, unsigned long long* id) {
  return with_ctx([&] { return cuStreamGetId(per_thread(s), id); });
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  return capture_info(s, status, nullptr, nullptr, nullptr, nullptr, nullptr);
}
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, cudaStreamCaptureStatus* status) {
  return capture_info(per_thread(s), status, nullptr, nullptr, nullptr, nullptr, nullptr);
}
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus* status,
                                     unsigned long long* id, cudaGraph_t* graph,
                                     const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* ndeps) {
  return capture_info(s, status, id, graph, deps, edges, ndeps);
}
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, cudaStreamCaptureStatus* status,
                                          unsigned long long* id, cudaGraph_t* graph,
                                          const cudaGraphNode_t** deps,
                                          const cudaGraphEdgeData** edges, size_t* ndeps) {
  return capture_info(per_thread(s), status, id, graph, deps, edges, ndeps);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  return with_ctx(
      [&] { return cuStreamBeginCapture_v2(s, static_cast<CUstreamCaptureMode>(mode)); });
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, cudaStreamCaptureMode mode) {
  return with_ctx([&] {
    return cuStreamBeginCapture_v2(per_thread(s), static_cast<CUstreamCaptureMode>(mode));
  });
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  return with_ctx([&] { return cuStreamEndCapture(s, graph); });
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* graph) {
  return with_ctx([&] { return cuStreamEndCapture(per_thread(s), graph); });
}
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  return finish(cuThreadExchangeStreamCaptureMode(reinterpret_cast<CUstreamCaptureMode*>(mode)));
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return with_ctx([&] { return cuGraphInstantiateWithFlags(exec, graph, flags); });
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  return cudaGraphInstantiateWithFlags(exec, graph, flags);
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  return with_ctx([&] { return cuGraphLaunch(exec, s); });
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t s) {
  return with_ctx([&] { return cuGraphLaunch(exec, per_thread(s)); });
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return finish(cuGraphDestroy(graph));
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  return finish(cuGraphExecDestroy(exec));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return with_ctx([&] { return cuLaunchHostFunc(s, fn, data); });
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return with_ctx([&] { return cuLaunchHostFunc(per_thread(s), fn, data); });
}
cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t fn, void* data,
                                  unsigned int flags) {
  return add_callback(s, s, fn, data, flags);
}
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t fn, void* data,
                                       unsigned int flags) {
  return add_callback(s, per_thread(s), fn, data, flags);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  // cudaEvent* flag values equal the driver's CU_EVENT_* values.
  return with_ctx([&] { return cuEventCreate(e, flags); });
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  return cudaEventCreateWithFlags(e, cudaEventDefault);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  return with_ctx([&] { return cuEventRecord(e, s); });
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  return with_ctx([&] { return cuEventRecord(e, per_thread(s)); });
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  return with_ctx([&] { return cuEventRecordWithFlags(e, s, flags); });
}
cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  return with_ctx([&] { return cuEventRecordWithFlags(e, per_thread(s), flags); });
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  return with_ctx([&] { return cuEventQuery(e); });
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return with_ctx([&] { return cuEventSynchronize(e); });
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  return with_ctx([&] { return cuEventElapsedTime_v2(ms, a, b); });
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  return with_ctx([&] { return cuEventDestroy_v2(e); });
}

}  // extern "C"
