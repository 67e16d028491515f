// Driver API: events with timing.
#include <chrono>

#include <cuda.h>

#include "capture.h"
#include "driver_state.h"
#include "event.h"
#include "sim_internal.h"

using namespace ringside::sim;

namespace {

bool valid_event(CUevent ev) {
  return ev != nullptr && ev->magic == CUevent_st::kMagic;
}

std::shared_ptr<EventRecord> latest(CUevent ev) {
  std::lock_guard<std::mutex> lk(ev->mu);
  return ev->record;
}

CUresult record(CUevent ev, CUstream h, bool ptsz, unsigned flags) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!valid_event(ev)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 && flags != CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<StreamCore> s;
  if (CUresult r = resolve_stream(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  auto rec = std::make_shared<EventRecord>();
  rec->stream = s;
  // The marker is not stretched: slow_gpu stretches the work, not the timestamping.
  rec->seq = submit(
      s,
      [rec] {
        rec->ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count());
      },
      RINGSIM_TASK_NO_STRETCH | RINGSIM_TASK_EVENT);
  std::lock_guard<std::mutex> lk(ev->mu);
  ev->record = rec;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuEventCreate(CUevent* out, unsigned int flags) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  constexpr unsigned kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (out == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) != 0) return CUDA_ERROR_NOT_SUPPORTED;  // no IPC in the sim
  if (current_context() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  auto* ev = new CUevent_st();
  ev->flags = flags;
  *out = ev;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent ev, CUstream h) {
  return record(ev, h, false, 0);
}
CUresult cuEventRecord_ptsz(CUevent ev, CUstream h) {
  return record(ev, h, true, 0);
}
CUresult cuEventRecordWithFlags(CUevent ev, CUstream h, unsigned int flags) {
  return record(ev, h, false, flags);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent ev, CUstream h, unsigned int flags) {
  return record(ev, h, true, flags);
}

CUresult cuEventQuery(CUevent ev) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!valid_event(ev)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = check_capture_safe(); r != CUDA_SUCCESS) return r;
  auto rec = latest(ev);
  if (!rec) return CUDA_SUCCESS;  // never recorded counts as complete
  return rec->stream->done(rec->seq) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent ev) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!valid_event(ev)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = check_capture_safe(); r != CUDA_SUCCESS) return r;
  auto rec = latest(ev);
  if (rec) rec->stream->wait(rec->seq);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_event(start) || !valid_event(end)) return CUDA_ERROR_INVALID_HANDLE;
  if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0)
    return CUDA_ERROR_INVALID_HANDLE;
  auto a = latest(start), b = latest(end);
  if (!a || !b) return CUDA_ERROR_INVALID_HANDLE;
  if (!a->stream->done(a->seq) || !b->stream->done(b->seq)) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(b->ns.load() - a->ns.load()) / 1e6);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}

CUresult cuEventDestroy_v2(CUevent ev) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!valid_event(ev)) return CUDA_ERROR_INVALID_HANDLE;
  ev->magic = 0;
  delete ev;  // a pending marker owns its record, so destroying early is safe
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent ev) {
  return cuEventDestroy_v2(ev);
}

}  // extern "C"
