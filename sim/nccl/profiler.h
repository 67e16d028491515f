// NCCL's profiler plugin, driven as NCCL 2.28 drives it (the ABI is
// include/ringside/nccl_profiler_abi.h): loaded once per process by the rules of
// NCCL_PROFILER_PLUGIN, `init` per communicator once it is connected, `finalize`
// at destroy or abort, and events started, recorded and stopped by the executor
// (proxy_events.h).  Without a plugin every call here is a no-op.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringside/nccl_profiler_abi.h"

namespace ringside::sim::nccl {

class Comm;

namespace profiler {

// The process-wide activation mask (0: no plugin, or it wants no events).
uint64_t mask();
inline bool wants(uint64_t bits) {
  return (mask() & bits) != 0;
}

// Loads the plugin on first use and calls its init for `comm`.
void comm_init(Comm& comm);
// Calls finalize once; events of the comm stop first.
void comm_finalize(Comm& comm);

// `descr` is filled in the v5 layout and converted for a v4 plugin.  Returns the
// plugin's handle (may be null: then NCCL passes null as the children's parent).
void* start(Comm& comm, nccl_profiler::EventDescrV5& descr);
void record(Comm& comm, void* handle, int state, size_t trans_size);
// A kernel channel's stop (kKernelChStop) with the GPU timer at its end.
void record_kernel_stop(Comm& comm, void* handle, uint64_t p_timer);
void stop(Comm& comm, void* handle);

}  // namespace profiler
}  // namespace ringside::sim::nccl
