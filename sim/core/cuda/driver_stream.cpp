// Driver API: streams, host functions, stream capture queries (capture itself: capture.cpp).
// Each entry point with a _ptsz twin differs only in what stream handle 0 means.
#include <cuda.h>

#include "capture.h"
#include "driver_state.h"
#include "event.h"
#include "sim_internal.h"

using namespace ringside::sim;

namespace {

CUresult stream_of(CUstream h, bool ptsz, std::shared_ptr<StreamCore>* s) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return resolve_stream(h, ptsz, s);
}

// Waiting for a capturing stream is illegal (its work is not running) and
// invalidates the capture; other waits are potentially unsafe calls.
CUresult check_wait(StreamCore& s) {
  if (std::shared_ptr<CaptureSeq> seq = s.capture()) {
    seq->invalidated.store(true);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return check_capture_safe();
}

CUresult stream_synchronize(CUstream h, bool ptsz) {
  std::shared_ptr<StreamCore> s;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_wait(*s); r != CUDA_SUCCESS) return r;
  s->wait(s->last_enqueued());
  return CUDA_SUCCESS;
}

CUresult stream_query(CUstream h, bool ptsz) {
  std::shared_ptr<StreamCore> s;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_wait(*s); r != CUDA_SUCCESS) return r;
  return s->done(s->last_enqueued()) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult stream_get_ctx(CUstream h, bool ptsz, CUcontext* ctx) {
  std::shared_ptr<StreamCore> s;
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  *ctx = &devices()[static_cast<size_t>(s->device())].primary_ctx;
  return CUDA_SUCCESS;
}

CUresult launch_host_func(CUstream h, bool ptsz, CUhostFn fn, void* data) {
  std::shared_ptr<StreamCore> s;
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  submit(
      s, [fn, data] { fn(data); }, 0);
  return CUDA_SUCCESS;
}

CUresult wait_event(CUstream h, bool ptsz, CUevent ev, unsigned flags) {
  std::shared_ptr<StreamCore> s;
  if (ev == nullptr || ev->magic != CUevent_st::kMagic) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 && flags != CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  std::shared_ptr<EventRecord> rec;
  {
    std::lock_guard<std::mutex> lk(ev->mu);
    rec = ev->record;
  }
  if (!rec) return CUDA_SUCCESS;  // never recorded: nothing to wait for, as in CUDA
  submit(s, nullptr, RINGSIM_TASK_NO_STRETCH, {{rec->stream, rec->seq}});
  return CUDA_SUCCESS;
}

CUresult capture_status(CUstream h, bool ptsz, CUstreamCaptureStatus* status) {
  std::shared_ptr<StreamCore> s;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  *status = capture_status_of(*s, nullptr);
  return CUDA_SUCCESS;
}

CUresult capture_info(CUstream h, bool ptsz, CUstreamCaptureStatus* status, cuuint64_t* id,
                      CUgraph* graph, const CUgraphNode** deps, const CUgraphEdgeData** edges,
                      size_t* ndeps) {
  std::shared_ptr<StreamCore> s;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  uint64_t capture_id = 0;
  *status = capture_status_of(*s, &capture_id);
  if (id != nullptr) *id = capture_id;
  if (graph != nullptr) *graph = nullptr;
  if (deps != nullptr) *deps = nullptr;
  if (edges != nullptr) *edges = nullptr;
  if (ndeps != nullptr) *ndeps = 0;
  return CUDA_SUCCESS;
}

CUresult stream_attr(CUstream h, bool ptsz, std::shared_ptr<StreamCore>* s) {
  return stream_of(h, ptsz, s);
}

}  // namespace

extern "C" {

CUresult cuStreamCreateWithPriority(CUstream* out, unsigned int flags, int priority) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  int dev = 0;
  if (CUresult r = current_device(&dev); r != CUDA_SUCCESS) return r;
  auto* h = new CUstream_st();
  h->core = StreamCore::create(dev, flags, priority, StreamKind::kNormal);
  *out = h;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* out, unsigned int flags) {
  return cuStreamCreateWithPriority(out, flags, 0);
}

CUresult cuStreamDestroy_v2(CUstream h) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
      h->magic != CUstream_st::kMagic)
    return CUDA_ERROR_INVALID_HANDLE;
  // As in CUDA: returns at once; queued work still completes, then the worker exits.
  h->core->retire();
  h->magic = 0;
  h->core.reset();
  delete h;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream h) {
  return cuStreamDestroy_v2(h);
}

CUresult cuStreamSynchronize(CUstream h) {
  return stream_synchronize(h, false);
}
CUresult cuStreamSynchronize_ptsz(CUstream h) {
  return stream_synchronize(h, true);
}
CUresult cuStreamQuery(CUstream h) {
  return stream_query(h, false);
}
CUresult cuStreamQuery_ptsz(CUstream h) {
  return stream_query(h, true);
}

CUresult cuStreamGetCtx(CUstream h, CUcontext* ctx) {
  return stream_get_ctx(h, false, ctx);
}
CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext* ctx) {
  return stream_get_ctx(h, true, ctx);
}
CUresult cuStreamGetCtx_v2(CUstream h, CUcontext* ctx, CUgreenCtx* green) {
  if (green != nullptr) *green = nullptr;
  return stream_get_ctx(h, false, ctx);
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext* ctx, CUgreenCtx* green) {
  if (green != nullptr) *green = nullptr;
  return stream_get_ctx(h, true, ctx);
}

CUresult cuStreamGetDevice(CUstream h, CUdevice* dev) {
  std::shared_ptr<StreamCore> s;
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, false, &s); r != CUDA_SUCCESS) return r;
  *dev = s->device();
  return CUDA_SUCCESS;
}
CUresult cuStreamGetDevice_ptsz(CUstream h, CUdevice* dev) {
  std::shared_ptr<StreamCore> s;
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, true, &s); r != CUDA_SUCCESS) return r;
  *dev = s->device();
  return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream h, unsigned int* flags) {
  std::shared_ptr<StreamCore> s;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, false, &s); r != CUDA_SUCCESS) return r;
  *flags = s->flags();
  return CUDA_SUCCESS;
}
CUresult cuStreamGetFlags_ptsz(CUstream h, unsigned int* flags) {
  std::shared_ptr<StreamCore> s;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, true, &s); r != CUDA_SUCCESS) return r;
  *flags = s->flags();
  return CUDA_SUCCESS;
}

CUresult cuStreamGetPriority(CUstream h, int* priority) {
  std::shared_ptr<StreamCore> s;
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, false, &s); r != CUDA_SUCCESS) return r;
  *priority = s->priority();
  return CUDA_SUCCESS;
}
CUresult cuStreamGetPriority_ptsz(CUstream h, int* priority) {
  std::shared_ptr<StreamCore> s;
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, true, &s); r != CUDA_SUCCESS) return r;
  *priority = s->priority();
  return CUDA_SUCCESS;
}

CUresult cuStreamGetId(CUstream h, unsigned long long* id) {
  std::shared_ptr<StreamCore> s;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, false, &s); r != CUDA_SUCCESS) return r;
  *id = s->id();
  return CUDA_SUCCESS;
}
CUresult cuStreamGetId_ptsz(CUstream h, unsigned long long* id) {
  std::shared_ptr<StreamCore> s;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = stream_attr(h, true, &s); r != CUDA_SUCCESS) return r;
  *id = s->id();
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream h, CUevent ev, unsigned int flags) {
  return wait_event(h, false, ev, flags);
}
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent ev, unsigned int flags) {
  return wait_event(h, true, ev, flags);
}

CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void* data) {
  return launch_host_func(h, false, fn, data);
}
CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void* data) {
  return launch_host_func(h, true, fn, data);
}

CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* status) {
  return capture_status(h, false, status);
}
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus* status) {
  return capture_status(h, true, status);
}

CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return capture_info(h, false, status, id, nullptr, nullptr, nullptr, nullptr);
}
CUresult cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return capture_info(h, true, status, id, nullptr, nullptr, nullptr, nullptr);
}
CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps, size_t* ndeps) {
  return capture_info(h, false, status, id, graph, deps, nullptr, ndeps);
}
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                        CUgraph* graph, const CUgraphNode** deps, size_t* ndeps) {
  return capture_info(h, true, status, id, graph, deps, nullptr, ndeps);
}
CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps,
                                   const CUgraphEdgeData** edges, size_t* ndeps) {
  return capture_info(h, false, status, id, graph, deps, edges, ndeps);
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id,
                                        CUgraph* graph, const CUgraphNode** deps,
                                        const CUgraphEdgeData** edges, size_t* ndeps) {
  return capture_info(h, true, status, id, graph, deps, edges, ndeps);
}

}  // extern "C"
