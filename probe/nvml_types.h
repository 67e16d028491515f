// The probe's names for the NVML ABI it uses.  The declarations themselves
// live in ringside/nvml_abi.h (there is no nvml.h on the build machines), the
// one place the probe, nccl_bench and the sim share.
#pragma once

#include "ringside/nvml_abi.h"

namespace ringside::probe {

using NvmlReturn = nvmlReturn_t;
using NvmlDevice = nvmlDevice_t;
using NvmlEventSet = nvmlEventSet_t;
using NvmlUtilization = nvmlUtilization_t;
using NvmlMemory = nvmlMemory_t;
using NvmlEventData = nvmlEventData_t;

inline constexpr NvmlReturn kNvmlSuccess = NVML_SUCCESS;
inline constexpr NvmlReturn kNvmlErrorNotSupported = NVML_ERROR_NOT_SUPPORTED;
inline constexpr NvmlReturn kNvmlErrorTimeout = NVML_ERROR_TIMEOUT;

inline constexpr nvmlClockType_t kNvmlClockSm = NVML_CLOCK_SM;
inline constexpr nvmlClockType_t kNvmlClockMem = NVML_CLOCK_MEM;
inline constexpr nvmlTemperatureSensors_t kNvmlTemperatureGpu = NVML_TEMPERATURE_GPU;
inline constexpr nvmlMemoryErrorType_t kNvmlMemoryErrorCorrected = NVML_MEMORY_ERROR_TYPE_CORRECTED;
inline constexpr nvmlMemoryErrorType_t kNvmlMemoryErrorUncorrected =
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
inline constexpr nvmlEccCounterType_t kNvmlVolatileEcc = NVML_VOLATILE_ECC;
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = nvmlEventTypeXidCriticalError;

}  // namespace ringside::probe
