// NVML loaded at run time with dlopen("libnvidia-ml.so.1"); never linked.
// Entry points that are missing or report NOT_SUPPORTED are skipped.
#pragma once

#include <string>

#include "nvml_types.h"

namespace ringside::probe {

struct Nvml {
  bool loaded = false;
  std::string error;

  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*device_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*clock_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*power_usage)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*total_ecc_errors)(NvmlDevice, int, int, unsigned long long*) = nullptr;
  NvmlReturn (*remapped_rows)(NvmlDevice, unsigned int*, unsigned int*, unsigned int*,
                              unsigned int*) = nullptr;
  NvmlReturn (*pcie_replay_counter)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*event_set_create)(NvmlEventSet*) = nullptr;
  NvmlReturn (*register_events)(NvmlDevice, unsigned long long, NvmlEventSet) = nullptr;
  NvmlReturn (*event_set_wait)(NvmlEventSet, NvmlEventData*, unsigned int) = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;

  std::string describe(NvmlReturn rc) const;
};

// Loads and initialises once; `loaded` false with `error` when unusable.
const Nvml& nvml();

}  // namespace ringside::probe
