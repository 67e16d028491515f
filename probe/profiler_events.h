// The probe's NCCL profiler plugin callbacks (nccl_profiler_abi.h), turning proxy
// op and step events, and the kernel channels of send/recv tasks, into LinkTable
// counters.  Enabled events: ProxyOp, ProxyStep, P2p and KernelCh (NCCL then
// also starts their ancestors, which get no handle; a collective's kernel
// channels have no P2p parent and are ignored).
// Every call is cheap and never fails towards NCCL: an event the plugin cannot
// place gets a null handle, which NCCL passes back and which is ignored.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "link_table.h"
#include "ringside/nccl_profiler_abi.h"

namespace ringside::probe::plugin {

// A step's clock: readings in ticks (step_clock.h); a proxy op's times are scaled
// to nanoseconds by `ns_per_tick` once, when the op stops.
using Clock = int64_t (*)();

// `table` receives the communicator; `self` is this process's pid (proxy ops of
// another process, NCCL's PXN, carry pointers into that process).
void init(LinkTable& table, void** context, uint64_t comm_hash, int* activation_mask, int n_nodes,
          int nranks, int rank);
void start(void* context, void** handle, uint64_t type, void* parent,
           const nccl_profiler::ProxyOpDescr* op, int step, pid_t self);
// A send/recv task (P2p event): its peer, direction and size, for its kernel channels.
void start_task(void* context, void** handle, const char* func, const char* datatype, size_t count,
                int peer, uint8_t n_channels);
// A kernel channel (KernelCh event) of `parent`; `p_timer` is the GPU timer at its start.
void start_kernel(void** handle, void* parent, uint8_t channel, uint64_t p_timer);
// Bytes per element of NCCL's datatype name ("ncclFloat32" -> 4); 0 if unknown.
size_t datatype_bytes(const char* datatype);
void record(void* handle, int state, const nccl_profiler::StateArgs* args, Clock clock);
void stop(void* handle, Clock clock, double ns_per_tick = 1.0);

}  // namespace ringside::probe::plugin
