// What the process's threads got from the host's CPUs, from the per-thread
// accounting the kernel keeps in /proc/self/task/<tid>/schedstat ("<ns on a
// CPU> <ns waiting for one> <timeslices>"), in one pass over the threads alive now:
// - the run-queue delay summed over all threads.  A host with more runnable
//   threads than cores delays every thread that wakes up (a compute kernel's
//   host callback, a launch, a sleep that ends): the analyzer tells that apart
//   from uneven work;
// - the CPU time of the probe's own threads (writer, event completion, GPU
//   sampling), which register themselves (thread_util.h): what the probe costs
//   besides the work it does inside the application's NCCL calls.
#pragma once

#include <cstdint>

namespace ringside::probe {

struct HostCpu {
  int64_t run_delay_ns = 0;  // 0 when the kernel does not provide schedstat (then unknown)
  int64_t probe_cpu_ns = 0;  // own threads, the ended ones included; 0: unknown
};

HostCpu process_host_cpu();

// Called on a probe thread when it starts and when it ends (thread_util.h).
void own_thread_started();
void own_thread_ending();

}  // namespace ringside::probe
