// How long each device had at least one task running (NVML's utilization.gpu:
// the share of time one or more kernels executed), kept by the stream workers.
#pragma once

#include <cstdint>

namespace ringside::sim {

void device_busy_begin(int device);
void device_busy_end(int device);
// Nanoseconds the device was busy since the process started (a running task
// counts up to now).
uint64_t device_busy_ns(int device);

}  // namespace ringside::sim
