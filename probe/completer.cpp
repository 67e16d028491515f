// The completion thread: turns recorded CUDA events into device times on the
// host clock, and runs the watchdog over outstanding ops.
//
// Device time = host time of a reference event + cuEventElapsedTime(reference,
// event).  The reference is recorded on a private non-blocking stream (never
// on the application's streams) and re-anchored every few seconds, because
// elapsed times are floats in milliseconds and lose precision with distance.
// Its host time is bracketed by host readings; see clock_anchor.h for how a busy host
// (a preempted reading) is kept from shifting a rank's times.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "background.h"
#include "clock_anchor.h"
#include "cuda_driver.h"
#include "runtime.h"
#include "thread_util.h"

namespace ringside::probe {

namespace {

constexpr int64_t kReanchorNs = 2'000'000'000;
constexpr int64_t kAbandonGraceNs = 2'000'000'000;  // after destroy/abort, stop waiting
constexpr int64_t kWatchdogPeriodNs = 100'000'000;
// Polling periods: event timestamps come from the device, so polling only decides
// when an op leaves the ring, not its recorded times.  Each wake-up costs the same
// few microseconds whether it finds one op done or hundreds, so while ops are on the
// device the period is sized for a pass to find about kOpsPerPass of them done, at the
// rate the last pass saw, between kPollMinNs (ring headroom at a very high op rate)
// and kPollMaxNs, which is also the period when no op was done or none is outstanding.
// Nothing else waits for the pass: the writer flushes once a second, the watchdog
// looks every 100 ms, a ring passing a quarter full wakes the thread (op_tracker), and
// so does SIGTERM, for one prompt pass (lifecycle.cpp).
constexpr int64_t kPollMinNs = 1'000'000;
constexpr int64_t kPollMaxNs = 50'000'000;
constexpr uint64_t kOpsPerPass = 256;  // 1/32 of the default ring
// Completed ops wait in the rings until the writer takes them: past this many
// since its last wake-up, the writer is woken early so that rings never fill.
constexpr uint64_t kWakeWriterOps = 1024;

constexpr int kAnchorTries = 8;
constexpr int64_t kNarrowBracketNs = 20'000;

struct ContextClock {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent ref = nullptr;    // the current reference
  CUevent spare = nullptr;  // the next reference, recorded when re-anchoring
  HostInterval host;        // monotonic times the reference may have completed at
  int64_t anchored_at = 0;  // 0: never
  bool broken = false;
};

std::vector<ContextClock> g_clocks;  // completer thread only

// A clock's stream and events, made by an application thread the first time it times
// an op in a context (prepare_clock).  Creating a stream may need a driver lock that
// an application thread holds when a signal interrupts it, and SIGTERM's handler
// waits on that very thread for a completion pass: so that pass must never be the one
// that creates them.
struct PreparedClock {
  std::atomic<bool> ready{false};
  bool taken = false;  // by the completer thread, which alone reads this
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent ref = nullptr;
  CUevent spare = nullptr;
};
constexpr int kMaxPreparedClocks = 32;  // contexts; past them the completer makes its own
PreparedClock g_prepared[kMaxPreparedClocks];
int g_prepared_count = 0;  // under g_prepare_mu
std::mutex g_prepare_mu;

// Creates whichever of a clock's stream and events is still missing, in the current
// context.  False at the first that cannot be made, which stays null.
bool create_missing(CUstream& stream, CUevent& ref, CUevent& spare) {
  const CudaDriver& cu = cuda_driver();
  if (stream == nullptr && cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    stream = nullptr;
    return false;
  }
  for (CUevent* e : {&ref, &spare}) {
    if (*e == nullptr && cu.cuEventCreate(e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      *e = nullptr;
      return false;
    }
  }
  return true;
}

// Adopts what an application thread prepared for `ctx`, if anything.
void adopt_prepared(ContextClock& c) {
  for (PreparedClock& p : g_prepared) {
    if (!p.ready.load(std::memory_order_acquire)) break;
    if (p.ctx != c.ctx || p.taken) continue;
    p.taken = true;
    c.stream = p.stream;
    c.ref = p.ref;
    c.spare = p.spare;
    return;
  }
}

// Records the spare event on the clock's stream, brackets its completion between
// two host readings, and makes it the reference (clock_anchor.h).
bool re_anchor(ContextClock& c) {
  const CudaDriver& cu = cuda_driver();
  const int64_t t0 = now_ns();
  if (cu.cuEventRecord(c.spare, c.stream) != CUDA_SUCCESS ||
      cu.cuEventSynchronize(c.spare) != CUDA_SUCCESS)
    return false;
  HostInterval fresh{t0, now_ns()};
  float ms = 0;
  if (c.anchored_at != 0 && cu.cuEventElapsedTime(&ms, c.ref, c.spare) == CUDA_SUCCESS) {
    fresh = carry_forward(c.host, static_cast<int64_t>(static_cast<double>(ms) * 1e6), fresh);
  }
  std::swap(c.ref, c.spare);
  c.host = fresh;
  c.anchored_at = now_ns();
  return true;
}

ContextClock* clock_for(CUcontext ctx, int64_t now) {
  const CudaDriver& cu = cuda_driver();
  ContextClock* c = nullptr;
  for (ContextClock& k : g_clocks) {
    if (k.ctx == ctx) c = &k;
  }
  if (c == nullptr) {
    g_clocks.push_back(ContextClock{ctx});
    c = &g_clocks.back();
    adopt_prepared(*c);
  }
  if (c->broken) return nullptr;
  if (c->anchored_at != 0 && now - c->anchored_at < kReanchorNs) return c;
  if (cu.cuCtxSetCurrent(ctx) != CUDA_SUCCESS || !create_missing(c->stream, c->ref, c->spare)) {
    c->broken = true;
    return nullptr;
  }
  // A few tries, each narrowing the interval, until it is narrow.
  for (int attempt = 0; attempt < kAnchorTries; ++attempt) {
    if (!re_anchor(*c)) {
      c->broken = true;
      return nullptr;
    }
    if (c->host.width() <= kNarrowBracketNs) break;
  }
  return c;
}

bool device_time(ContextClock& c, void* event, int64_t& out_ns) {
  float ms = 0;
  if (cuda_driver().cuEventElapsedTime(&ms, c.ref, static_cast<CUevent>(event)) != CUDA_SUCCESS)
    return false;
  out_ns = c.host.mid() + static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  return true;
}

void finish(OpSlot& slot, trace::OpStatus status) {
  slot.rec.status = static_cast<uint8_t>(status);
  slot.state.store(kSlotComplete, std::memory_order_release);
}

// An op still running: remembers when the device started it, once it has.
void note_device_start(Runtime& rt, OpSlot& slot, int64_t now) {
  if (slot.dev_start_seen.load(std::memory_order_relaxed) != trace::kUnknownTime) return;
  if (cuda_driver().cuEventQuery(static_cast<CUevent>(slot.event_start)) != CUDA_SUCCESS) return;
  ContextClock* c = clock_for(static_cast<CUcontext>(slot.event_ctx), now);
  int64_t start = 0;
  if (c != nullptr && device_time(*c, slot.event_start, start)) {
    slot.dev_start_seen.store(start - rt.meta.clock_monotonic_ns, std::memory_order_release);
  }
}

// One op whose end event was recorded.  Returns false while still running.
bool try_complete(Runtime& rt, OpSlot& slot, int64_t now, bool final_pass) {
  const CudaDriver& cu = cuda_driver();
  const CUresult q = cu.cuEventQuery(static_cast<CUevent>(slot.event_end));
  if (q == CUDA_ERROR_NOT_READY) {
    note_device_start(rt, slot, now);
    const CommState* cs = slot.comm;
    if (cs != nullptr && cs->ended.load(std::memory_order_acquire) &&
        now - cs->ended_ns.load() > kAbandonGraceNs) {
      finish(slot, trace::OpStatus::kAbandoned);
      return true;
    }
    (void)final_pass;
    return false;
  }
  trace::OpStatus status = trace::OpStatus::kComplete;
  if (q == CUDA_SUCCESS) {
    ContextClock* c = clock_for(static_cast<CUcontext>(slot.event_ctx), now);
    int64_t start = 0;
    int64_t end = 0;
    if (c != nullptr && device_time(*c, slot.event_start, start) &&
        device_time(*c, slot.event_end, end)) {
      slot.rec.t_dev_start_ns = start - rt.meta.clock_monotonic_ns;
      slot.rec.t_dev_end_ns = end - rt.meta.clock_monotonic_ns;
      slot.rec.flags |= trace::kFlagDeviceTimed;
      // An abort ends the kernels it finds running: an op whose device end came after
      // its communicator's abort began did not finish, it was abandoned.
      const CommState* cs = slot.comm;
      if (cs != nullptr && cs->aborted.load(std::memory_order_relaxed) &&
          end >= cs->ended_ns.load(std::memory_order_relaxed))
        status = trace::OpStatus::kAbandoned;
    } else {
      rt.probe_errors.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    rt.probe_errors.fetch_add(1, std::memory_order_relaxed);
  }
  finish(slot, status);
  return true;
}

const char* pending_kind(uint32_t state) {
  switch (state) {
    case kSlotHostPending:
      return "host call not returned";
    case kSlotGroupDeferred:
      return "waiting for ncclGroupEnd";
    default:
      return "not finished on the device";
  }
}

void watchdog(Runtime& rt, ThreadState& ts, OpSlot& slot, uint32_t state, int64_t now_rel) {
  const double timeout = rt.config.watchdog_timeout_s;
  if (timeout <= 0 || slot.watchdog.load(std::memory_order_relaxed) != 0) return;
  const int64_t age = now_rel - slot.rec.t_enter_ns;
  if (static_cast<double>(age) < timeout * 1e9) return;
  slot.watchdog.store(trace::kFlagWatchdog, std::memory_order_relaxed);
  emit_event(trace::EventKind::kWatchdog, slot.rec.comm_id, slot.rec.seq, age, -1,
             "%s seq %llu outstanding %.1fs: %s",
             trace::op_kind_name(static_cast<trace::OpKind>(slot.rec.op)),
             static_cast<unsigned long long>(slot.rec.seq), static_cast<double>(age) / 1e9,
             pending_kind(state));
  (void)ts;
  request_flush();
}

// How long to sleep after a pass that took `since_last_ns` since the one before.
int64_t next_poll_ns(const CompletionPass& pass, int64_t since_last_ns) {
  if (!pass.outstanding || pass.completed == 0) return kPollMaxNs;
  const double per_op = static_cast<double>(std::max<int64_t>(since_last_ns, 0)) /
                        static_cast<double>(pass.completed);
  return std::clamp(static_cast<int64_t>(per_op * kOpsPerPass), kPollMinNs, kPollMaxNs);
}

}  // namespace

void prepare_clock(void* context) {
  const std::unique_lock<std::mutex> lock(g_prepare_mu, std::try_to_lock);
  if (!lock.owns_lock() || g_prepared_count == kMaxPreparedClocks) return;
  const auto ctx = static_cast<CUcontext>(context);
  for (int i = 0; i < g_prepared_count; ++i) {
    if (g_prepared[i].ctx == ctx) return;
  }
  PreparedClock& p = g_prepared[g_prepared_count];
  // What is not made here stays null, for the completer thread to make as without
  // preparation.
  (void)create_missing(p.stream, p.ref, p.spare);
  p.ctx = ctx;
  p.ready.store(true, std::memory_order_release);
  ++g_prepared_count;
}

CompletionPass complete_device_ops(Runtime& rt, bool final_pass) {
  static int64_t last_watchdog = 0;
  const int64_t now = now_ns();
  const bool check_watchdog = now - last_watchdog >= kWatchdogPeriodNs;
  if (check_watchdog) last_watchdog = now;
  CompletionPass pass;
  if (!rt.device_timing && !check_watchdog && !final_pass) return pass;
  const int64_t now_rel = now - rt.meta.clock_monotonic_ns;
  // A stream runs its work in order: once one of a thread's ops on a stream is still
  // running, that thread's later ops on the same stream are too, and are not queried
  // (one driver query per busy stream and pass, not one per outstanding op).
  // The ops of one NCCL group record their start events together, before its launch:
  // those behind the busy one in its own group are asked for their start only.
  struct Busy {
    uint64_t stream;
    uint64_t group;
  };
  static std::vector<Busy> busy_streams;  // completer thread only
  for (ThreadState* ts = rt.threads.load(std::memory_order_acquire); ts != nullptr; ts = ts->next) {
    busy_streams.clear();
    const uint64_t head = ts->ring.head();
    for (uint64_t i = ts->ring.tail(); i < head; ++i) {
      OpSlot& slot = ts->ring.at(i);
      const uint32_t state = slot.state.load(std::memory_order_acquire);
      if (state == kSlotDevicePending) {
        const uint64_t stream = slot.rec.stream;
        const auto busy = std::find_if(busy_streams.begin(), busy_streams.end(),
                                       [&](const Busy& b) { return b.stream == stream; });
        if (busy == busy_streams.end()) {
          const bool done = try_complete(rt, slot, now, final_pass);
          rt.completer_progress.fetch_add(1, std::memory_order_relaxed);
          if (done) {
            ++pass.completed;
            continue;
          }
          busy_streams.push_back({stream, slot.rec.group_id});
        } else if (busy->group != 0 && busy->group == slot.rec.group_id) {
          note_device_start(rt, slot, now);
        }
      }
      pass.outstanding = pass.outstanding || state == kSlotDevicePending ||
                         state == kSlotHostPending || state == kSlotGroupDeferred;
      if (check_watchdog && (state == kSlotHostPending || state == kSlotGroupDeferred ||
                             state == kSlotDevicePending)) {
        watchdog(rt, *ts, slot, state, now_rel);
      }
    }
  }
  return pass;
}

bool start_completer(Runtime& rt, std::string& error) {
  rt.helper_threads_running.fetch_add(1);  // before the thread runs: shutdown waits for it
  const bool ok = start_background_thread(
      "ringside-events",
      [&rt] {
        t_in_probe = true;  // NCCL calls from this thread (none expected) go straight through
        cuda_driver().leave_captures_alone();
        uint64_t unsignalled = 0;  // ops completed since the writer was last woken
        int64_t last_pass = now_ns();
        while (!rt.stopping.load(std::memory_order_acquire)) {
          const CompletionPass pass = complete_device_ops(rt, false);
          rt.completer_passes.fetch_add(1, std::memory_order_acq_rel);
          unsignalled += pass.completed;
          if (unsignalled >= kWakeWriterOps) {
            rt.writer_wake.wake();
            unsignalled = 0;
          }
          const int64_t now = now_ns();
          rt.completer_wake.wait(next_poll_ns(pass, now - last_pass));
          last_pass = now;
        }
        complete_device_ops(rt, true);
        rt.helper_threads_running.fetch_sub(1);
      },
      error);
  if (!ok) rt.helper_threads_running.fetch_sub(1);
  return ok;
}

}  // namespace ringside::probe
