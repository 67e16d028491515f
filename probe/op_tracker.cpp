#include "op_tracker.h"

#include "background.h"
#include "comm_registry.h"
#include "cuda_driver.h"
#include "hooks.h"
#include "op_ring.h"
#include "ringside/bandwidth.h"
#include "runtime.h"

namespace ringside::probe {

namespace {

using trace::OpKind;

uint8_t redop_code(int redop) {
  if (redop < 0) return 0;
  return redop >= ncclNumOps ? 255 : static_cast<uint8_t>(redop);
}

bool is_in_place(const OpCall& c, int rank, int dtype_bytes) {
  const auto* s = static_cast<const char*>(c.sendbuff);
  const auto* r = static_cast<const char*>(c.recvbuff);
  if (s == nullptr || r == nullptr) return false;
  const uint64_t part = c.count * static_cast<uint64_t>(dtype_bytes);
  switch (c.kind) {
    case OpKind::kAllGather:
      return rank >= 0 && s == r + rank * part;
    case OpKind::kReduceScatter:
      return rank >= 0 && r == s + rank * part;
    case OpKind::kGather:
      return c.peer >= 0 && s == r + c.peer * part;
    case OpKind::kScatter:
      return c.peer >= 0 && r == s + c.peer * part;
    default:
      return s == r;
  }
}

// The stream's context, cached per thread for the last non-special stream.
CUcontext stream_context(ThreadState& ts, const CudaDriver& cu, CUstream stream) {
  const bool cacheable = reinterpret_cast<uintptr_t>(stream) > 2;  // not NULL/legacy/per-thread
  if (cacheable && ts.cached_stream == stream) return static_cast<CUcontext>(ts.cached_ctx);
  CUcontext ctx = nullptr;
  if (cu.cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS) return nullptr;
  if (cacheable) {
    ts.cached_stream = stream;
    ts.cached_ctx = ctx;
  }
  return ctx;
}

// Makes sure the slot's pooled events live in `ctx` (created once per slot).
bool ensure_events(OpSlot& slot, const CudaDriver& cu, CUcontext ctx) {
  if (slot.event_ctx == ctx && slot.event_start != nullptr) return true;
  if (slot.event_start != nullptr) cu.cuEventDestroy(static_cast<CUevent>(slot.event_start));
  if (slot.event_end != nullptr) cu.cuEventDestroy(static_cast<CUevent>(slot.event_end));
  slot.event_start = slot.event_end = slot.event_ctx = nullptr;
  CUcontext current = nullptr;
  cu.cuCtxGetCurrent(&current);
  if (current != ctx) cu.cuCtxSetCurrent(ctx);
  CUevent a = nullptr;
  CUevent b = nullptr;
  const bool ok = cu.cuEventCreate(&a, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
                  cu.cuEventCreate(&b, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
  if (ok) prepare_clock(ctx);
  if (current != ctx) cu.cuCtxSetCurrent(current);
  if (!ok) {
    if (a != nullptr) cu.cuEventDestroy(a);
    return false;
  }
  slot.event_start = a;
  slot.event_end = b;
  slot.event_ctx = ctx;
  return true;
}

// Records the start event unless the stream is capturing a graph: recording
// there would add a node to the user's graph.  Returns whether timing runs.
bool record_start(ThreadState& ts, OpSlot& slot, CUstream stream) {
  const CudaDriver& cu = cuda_driver();
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cu.cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS) return false;
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    slot.rec.flags |= trace::kFlagGraphCapture;
    return false;
  }
  CUcontext ctx = stream_context(ts, cu, stream);
  if (ctx == nullptr || !ensure_events(slot, cu, ctx)) return false;
  return cu.cuEventRecord(static_cast<CUevent>(slot.event_start), stream) == CUDA_SUCCESS;
}

bool record_end(OpSlot& slot, CUstream stream) {
  return cuda_driver().cuEventRecord(static_cast<CUevent>(slot.event_end), stream) == CUDA_SUCCESS;
}

void finish(OpSlot& slot, trace::OpStatus status) {
  slot.rec.status = static_cast<uint8_t>(status);
  slot.state.store(kSlotComplete, std::memory_order_release);
}

// The op is on the device: the completion thread takes it from here at its next
// pass (within its longest period, sooner when the ring passes a quarter full).
void device_pending(OpSlot& slot) {
  slot.state.store(kSlotDevicePending, std::memory_order_release);
}

bool failed(ncclResult_t rc) {
  return rc != ncclSuccess && rc != ncclInProgress;
}

}  // namespace

OpSlot* begin_op(const OpCall& call) noexcept {
  Runtime* rt = runtime();
  ThreadState* ts = this_thread_state();
  if (rt == nullptr || ts == nullptr) return nullptr;
  CommState* cs = rt->registry.find(call.comm);
  if (cs == nullptr) cs = adopt_unknown_comm(call.comm);
  if (cs != nullptr && cs->nranks.load(std::memory_order_relaxed) < 0)
    describe_comm_if_needed(cs, call.comm);

  // Sequence numbers advance even when the record is dropped, so that
  // later records still align across ranks.
  const bool p2p = call.kind == OpKind::kSend || call.kind == OpKind::kRecv;
  uint64_t seq = 0;
  uint32_t peer_seq = 0;
  if (cs != nullptr) {
    if (p2p) {
      seq = cs->coll_seq.load(std::memory_order_relaxed);
      peer_seq = cs->next_p2p_seq(call.peer, call.kind == OpKind::kRecv);
    } else {
      seq = cs->coll_seq.fetch_add(1, std::memory_order_relaxed);
    }
  }
  OpSlot* slot = ts->ring.reserve();
  if (slot == nullptr) {
    ts->dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const int dtype_bytes = nccl_dtype_size(call.dtype);
  const int nranks = cs != nullptr ? cs->nranks.load(std::memory_order_relaxed) : -1;
  const int rank = cs != nullptr ? cs->rank.load(std::memory_order_relaxed) : -1;
  const bool in_group = ts->group_depth > 0;

  trace::OpRecord& r = slot->rec;
  r.t_enter_ns = now_ns() - rt->meta.clock_monotonic_ns;
  r.t_exit_ns = trace::kUnknownTime;
  r.t_dev_start_ns = trace::kUnknownTime;
  r.t_dev_end_ns = trace::kUnknownTime;
  slot->dev_start_seen.store(trace::kUnknownTime, std::memory_order_relaxed);
  r.comm_id = cs != nullptr ? cs->id : 0;
  r.seq = seq;
  r.count = call.count;
  r.bytes = nccl_tests_size(call.kind, call.count, dtype_bytes, nranks > 0 ? nranks : 1);
  r.stream = reinterpret_cast<uint64_t>(call.stream);
  r.group_id = in_group ? ts->current_group : 0;
  r.peer = call.peer;
  r.peer_seq = peer_seq;
  r.op = static_cast<uint8_t>(call.kind);
  r.dtype = static_cast<uint8_t>(call.dtype);
  r.redop = redop_code(call.redop);
  r.flags = 0;
  if (in_group) r.flags |= trace::kFlagInGroup;
  if (is_in_place(call, rank, dtype_bytes)) r.flags |= trace::kFlagInPlace;
  r.status = static_cast<uint8_t>(trace::OpStatus::kHostPending);
  slot->comm = cs;
  slot->watchdog.store(0, std::memory_order_relaxed);
  slot->timing = false;
  if (rt->device_timing) {
    // Inside a group nothing reaches the stream before ncclGroupEnd: events wait for it.
    slot->timing = in_group ? true : record_start(*ts, *slot, call.stream);
  }
  slot->state.store(kSlotHostPending, std::memory_order_release);
  // Only this thread fills its ring, one slot at a time, so a ring filling faster
  // than the background threads' periods empty it passes a quarter full exactly
  // once on its way up: they are woken then, instead of finding it full.
  if (ts->ring.publish() == ts->ring.capacity() / 4) {
    rt->completer_wake.wake();
    rt->writer_wake.wake();
  }
  return slot;
}

void end_op(OpSlot* slot, const OpCall& call, ncclResult_t rc) noexcept {
  if (slot == nullptr) return;
  Runtime* rt = runtime();
  trace::OpRecord& r = slot->rec;
  r.t_exit_ns = now_ns() - rt->meta.clock_monotonic_ns;
  if (failed(rc)) {
    r.flags |= trace::kFlagNcclError;
    // NCCL rejected the call, so it is not one of the communicator's ops:
    // give its sequence number back unless another op took the next one.
    if (slot->comm != nullptr && !(r.flags & trace::kFlagInGroup) && call.kind != OpKind::kSend &&
        call.kind != OpKind::kRecv) {
      uint64_t expected = r.seq + 1;
      slot->comm->coll_seq.compare_exchange_strong(expected, r.seq, std::memory_order_relaxed);
    }
    finish(*slot, trace::OpStatus::kComplete);
  } else if (r.flags & trace::kFlagInGroup) {
    slot->state.store(kSlotGroupDeferred, std::memory_order_release);
  } else if (slot->timing && record_end(*slot, call.stream)) {
    device_pending(*slot);
  } else {
    slot->timing = false;
    finish(*slot, trace::OpStatus::kComplete);
  }
}

void group_started(ncclResult_t rc) noexcept {
  ThreadState* ts = this_thread_state();
  if (ts == nullptr || failed(rc)) return;
  if (ts->group_depth++ == 0) {
    ts->current_group = ++ts->group_counter;
    ts->group_first = ts->ring.head();
  }
}

void group_ending(bool simulated) noexcept {
  ThreadState* ts = this_thread_state();
  Runtime* rt = runtime();
  if (ts == nullptr || rt == nullptr || ts->group_depth != 1 || simulated || !rt->device_timing)
    return;
  const uint64_t head = ts->ring.head();
  for (uint64_t i = ts->group_first; i < head; ++i) {
    OpSlot& slot = ts->ring.at(i);
    if (slot.state.load(std::memory_order_acquire) != kSlotGroupDeferred || !slot.timing) continue;
    slot.timing = record_start(*ts, slot, reinterpret_cast<CUstream>(slot.rec.stream));
  }
}

void group_ended(ncclResult_t rc, bool simulated) noexcept {
  ThreadState* ts = this_thread_state();
  if (ts == nullptr || ts->group_depth == 0) return;
  if (--ts->group_depth != 0) return;
  const uint64_t head = ts->ring.head();
  for (uint64_t i = ts->group_first; i < head; ++i) {
    OpSlot& slot = ts->ring.at(i);
    if (slot.state.load(std::memory_order_acquire) != kSlotGroupDeferred) continue;
    if (simulated) {
      // ncclGroupSimulateEnd only estimates: these ops never run.
      finish(slot, trace::OpStatus::kAbandoned);
    } else if (failed(rc)) {
      slot.rec.flags |= trace::kFlagNcclError;
      finish(slot, trace::OpStatus::kComplete);
    } else if (slot.timing && record_end(slot, reinterpret_cast<CUstream>(slot.rec.stream))) {
      device_pending(slot);
    } else {
      slot.timing = false;
      finish(slot, trace::OpStatus::kComplete);
    }
  }
}

}  // namespace ringside::probe
