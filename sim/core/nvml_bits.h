// Names of NVML's clock-event (throttle) reason bits in the cluster file.  The
// bits themselves are NVML's, from include/ringside/nvml_abi.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ringside/nvml_abi.h"

namespace ringside::sim {

// "sw_thermal" -> bit; 0 for an unknown name.
uint64_t nvml_reason_bit(std::string_view name);
// "gpu_idle, applications_clocks, ..." for error messages and docs.
std::string nvml_reason_names();

}  // namespace ringside::sim
