// The few NVML ABI types and constants the probe uses (there is no nvml.h on
// the build machines).  Values are NVML's published ABI.
#pragma once

namespace ringside::probe {

using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
using NvmlEventSet = struct NvmlEventSetOpaque*;

inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlErrorNotSupported = 3;
inline constexpr NvmlReturn kNvmlErrorTimeout = 10;

inline constexpr int kNvmlClockSm = 1;
inline constexpr int kNvmlClockMem = 2;
inline constexpr int kNvmlTemperatureGpu = 0;
inline constexpr int kNvmlMemoryErrorCorrected = 0;
inline constexpr int kNvmlMemoryErrorUncorrected = 1;
inline constexpr int kNvmlVolatileEcc = 0;
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x8ull;

struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};

struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlEventData {
  NvmlDevice device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

}  // namespace ringside::probe
