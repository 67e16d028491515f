// The clock of the profiler plugin's step events: NCCL's proxy thread calls the
// plugin four times per transfer step, so each reading must cost little.  Where
// the CPU's time-stamp counter runs at a constant rate in every power state
// (x86-64 "invariant TSC") and the kernel itself keeps time on it (clocksource
// "tsc": it found the counter in step on every CPU, as on GPU servers), a reading
// is the counter scaled to nanoseconds, calibrated once against CLOCK_MONOTONIC;
// elsewhere (VMs on kvm-clock, other CPUs) it is CLOCK_MONOTONIC itself.  Only differences between
// readings are used (the times a step spent in each state), never absolute times.
#pragma once

#include <cstdint>

namespace ringside::probe {

// Calibrates on first use (a few milliseconds, asleep); thread-safe.
void init_step_clock();
// Nanoseconds on a monotonic scale of its own; init_step_clock() first.
int64_t step_clock_ns();
// The raw reading behind step_clock_ns(): counter ticks, or nanoseconds where the
// counter is not used.  Differences of readings times step_clock_ns_per_tick() are
// nanoseconds; a step's times are kept in ticks and scaled once per proxy op.
int64_t step_clock_ticks();
double step_clock_ns_per_tick();
// Whether readings come from the time-stamp counter (for perf reports and tests).
bool step_clock_uses_tsc();

}  // namespace ringside::probe
