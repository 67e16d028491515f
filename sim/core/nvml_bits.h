// NVML clock-event (throttle) reason bits and their names in the cluster file.
// Bit values come from include/ringside/nvml_abi.h (NVML's ABI).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ringside/nvml_abi.h"

namespace ringside::sim {

inline constexpr uint64_t kNvmlReasonGpuIdle = nvmlClocksEventReasonGpuIdle;
inline constexpr uint64_t kNvmlReasonApplicationsClocksSetting =
    nvmlClocksEventReasonApplicationsClocksSetting;
inline constexpr uint64_t kNvmlReasonSwPowerCap = nvmlClocksEventReasonSwPowerCap;
inline constexpr uint64_t kNvmlReasonHwSlowdown = nvmlClocksThrottleReasonHwSlowdown;
inline constexpr uint64_t kNvmlReasonSyncBoost = nvmlClocksEventReasonSyncBoost;
inline constexpr uint64_t kNvmlReasonSwThermalSlowdown = nvmlClocksEventReasonSwThermalSlowdown;
inline constexpr uint64_t kNvmlReasonHwThermalSlowdown = nvmlClocksThrottleReasonHwThermalSlowdown;
inline constexpr uint64_t kNvmlReasonHwPowerBrakeSlowdown =
    nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
inline constexpr uint64_t kNvmlReasonDisplayClockSetting = nvmlClocksEventReasonDisplayClockSetting;

// "sw_thermal" -> bit; 0 for an unknown name.
uint64_t nvml_reason_bit(std::string_view name);
// "gpu_idle, applications_clocks, ..." for error messages and docs.
std::string nvml_reason_names();

}  // namespace ringside::sim
