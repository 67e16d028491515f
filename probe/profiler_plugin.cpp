// libringside_probe.so is also an NCCL profiler plugin: NCCL (>= 2.23) finds
// `ncclProfiler_v5` (2.28) or `ncclProfiler_v4` (2.25-2.27) in the library named by
// NCCL_PROFILER_PLUGIN, which `ringside run` points at the probe itself.  The
// callbacks are in profiler_events.cpp; this file only adapts the two ABIs.
#include <unistd.h>

#include "profiler_events.h"
#include "runtime.h"
#include "step_clock.h"

namespace ringside::probe {
namespace {

using namespace nccl_profiler;

pid_t self_pid() {
  static const pid_t pid = getpid();
  return pid;
}

// Tracing off (RINGSIDE_ENABLE=0, or the probe could not start): no events at all.
NcclResult init_common(void** context, uint64_t comm_hash, int* mask, int n_nodes, int nranks,
                       int rank) {
  *context = nullptr;
  // Loaded by NCCL without the preload (or before any hooked call): start here.
  if (runtime() == nullptr) start_probe();
  if (runtime() == nullptr) {
    if (mask != nullptr) *mask = 0;
    return 0;
  }
  init_step_clock();
  plugin::init(link_table(), context, comm_hash, mask, n_nodes, nranks, rank);
  return 0;
}

NcclResult init_v5(void** context, uint64_t comm_id, int* mask, const char*, int n_nodes,
                   int nranks, int rank, DebugLogger) {
  return init_common(context, comm_id, mask, n_nodes, nranks, rank);
}

NcclResult init_v4(void** context, int* mask, const char*, uint64_t comm_hash, int n_nodes,
                   int nranks, int rank, DebugLogger) {
  return init_common(context, comm_hash, mask, n_nodes, nranks, rank);
}

// v4 and v5 lay out everything after `type` alike.
template <class Descr>
void start_any(void* context, void** handle, const Descr& d) {
  if (d.type == kP2p) {
    plugin::start_task(context, handle, d.p2p.func, d.p2p.datatype, d.p2p.count, d.p2p.peer,
                       d.p2p.n_channels);
  } else if (d.type == kKernelCh) {
    plugin::start_kernel(handle, d.parent, d.kernel_ch.channel_id, d.kernel_ch.p_timer);
  } else {
    plugin::start(context, handle, d.type, d.parent, &d.proxy_op, d.proxy_step.step, self_pid());
  }
}

NcclResult start_v5(void* context, void** handle, EventDescrV5* d) {
  start_any(context, handle, *d);
  return 0;
}

NcclResult start_v4(void* context, void** handle, EventDescrV4* d) {
  start_any(context, handle, *d);
  return 0;
}

NcclResult stop_event(void* handle) {
  plugin::stop(handle, step_clock_ticks, step_clock_ns_per_tick());
  return 0;
}

NcclResult record_state(void* handle, int state, StateArgs* args) {
  plugin::record(handle, state, args, step_clock_ticks);
  return 0;
}

// Communicators stay in the table: their last window is written at the next flush.
NcclResult finalize(void*) {
  return 0;
}

}  // namespace
}  // namespace ringside::probe

// What NCCL looks up with dlsym (non-const: a const object has internal linkage).
extern "C" {
__attribute__((visibility("default")))
ringside::nccl_profiler::ProfilerV5 ncclProfiler_v5 = {"ringside",
                                                       ringside::probe::init_v5,
                                                       ringside::probe::start_v5,
                                                       ringside::probe::stop_event,
                                                       ringside::probe::record_state,
                                                       ringside::probe::finalize};
__attribute__((visibility("default")))
ringside::nccl_profiler::ProfilerV4 ncclProfiler_v4 = {"ringside",
                                                       ringside::probe::init_v4,
                                                       ringside::probe::start_v4,
                                                       ringside::probe::stop_event,
                                                       ringside::probe::record_state,
                                                       ringside::probe::finalize};
}
