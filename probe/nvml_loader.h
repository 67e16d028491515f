// NVML loaded at run time with dlopen("libnvidia-ml.so.1"); never linked.
// Entry points that are missing or report NOT_SUPPORTED are skipped.
#pragma once

#include <string>

#include "ringside/nvml_abi.h"

namespace ringside::probe {

struct Nvml {
  bool loaded = false;
  std::string error;

  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*device_by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*total_ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*,
                                unsigned int*) = nullptr;
  nvmlReturn_t (*pcie_replay_counter)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;

  std::string describe(nvmlReturn_t rc) const;
};

// Loads and initialises once; `loaded` false with `error` when unusable.
const Nvml& nvml();

}  // namespace ringside::probe
