// NVML stand-in state: the GPUs of this process's node (all of them: NVML ignores
// CUDA_VISIBLE_DEVICES), with the values of the cluster file.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cluster.h"
#include "ringside/nvml_abi.h"

struct nvmlDevice_st {
  unsigned index = 0;  // local GPU index
  std::string name, uuid, pci_bus_id, pci_bus_id_legacy;
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0;
  const ringside::sim::GpuNvmlState* state = nullptr;
};

namespace ringside::sim::nvml {

// NVML_ERROR_UNINITIALIZED unless nvmlInit succeeded and was not shut down.
nvmlReturn_t check_initialized();
// Validates a handle; also checks initialization.
nvmlReturn_t check_device(nvmlDevice_t device);
std::vector<nvmlDevice_st>& devices();
// Steady-clock time of the first nvmlInit in this process (XID times count from it).
std::chrono::steady_clock::time_point init_time();

}  // namespace ringside::sim::nvml
