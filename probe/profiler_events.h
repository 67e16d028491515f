// The probe's NCCL profiler plugin callbacks (nccl_profiler_abi.h), turning proxy
// op and step events into LinkTable counters.  Enabled events: ProxyOp and
// ProxyStep only (NCCL then also starts their ancestors, which get no handle).
// Every call is cheap and never fails towards NCCL: an event the plugin cannot
// place gets a null handle, which NCCL passes back and which is ignored.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "link_table.h"
#include "ringside/nccl_profiler_abi.h"

namespace ringside::probe::plugin {

using Clock = int64_t (*)();

// `table` receives the communicator; `self` is this process's pid (proxy ops of
// another process, NCCL's PXN, carry pointers into that process).
void init(LinkTable& table, void** context, uint64_t comm_hash, int* activation_mask, int n_nodes,
          int nranks, int rank);
void start(void* context, void** handle, uint64_t type, void* parent,
           const nccl_profiler::ProxyOpDescr* op, int step, pid_t self);
void record(void* handle, int state, const nccl_profiler::StateArgs* args, Clock clock);
void stop(void* handle, Clock clock);

}  // namespace ringside::probe::plugin
