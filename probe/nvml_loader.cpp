#include "nvml_loader.h"

#include "ringside/dyn_lib.h"

namespace ringside::probe {

namespace {

Nvml load() {
  Nvml n;
  void* lib = open_library("libnvidia-ml.so.1", n.error);
  if (lib == nullptr) return n;
  resolve(lib, n.init, {"nvmlInit_v2", "nvmlInit"});
  resolve(lib, n.device_by_pci_bus_id,
          {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
  resolve(lib, n.clock_info, {"nvmlDeviceGetClockInfo"});
  resolve(lib, n.clock_event_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(lib, n.temperature, {"nvmlDeviceGetTemperature"});
  resolve(lib, n.power_usage, {"nvmlDeviceGetPowerUsage"});
  resolve(lib, n.utilization, {"nvmlDeviceGetUtilizationRates"});
  resolve(lib, n.memory_info, {"nvmlDeviceGetMemoryInfo"});
  resolve(lib, n.total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  resolve(lib, n.remapped_rows, {"nvmlDeviceGetRemappedRows"});
  resolve(lib, n.pcie_replay_counter, {"nvmlDeviceGetPcieReplayCounter"});
  resolve(lib, n.event_set_create, {"nvmlEventSetCreate"});
  resolve(lib, n.register_events, {"nvmlDeviceRegisterEvents"});
  resolve(lib, n.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  resolve(lib, n.error_string, {"nvmlErrorString"});
  if (n.init == nullptr || n.device_by_pci_bus_id == nullptr) {
    n.error = "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2";
    return n;
  }
  const nvmlReturn_t rc = n.init();
  if (rc != NVML_SUCCESS) {
    n.error = "nvmlInit failed: " + n.describe(rc);
    return n;
  }
  n.loaded = true;
  return n;
}

}  // namespace

std::string Nvml::describe(nvmlReturn_t rc) const {
  const char* text = error_string != nullptr ? error_string(rc) : nullptr;
  return "nvmlReturn " + std::to_string(rc) + (text ? std::string(" (") + text + ")" : "");
}

const Nvml& nvml() {
  static const Nvml instance = load();
  return instance;
}

}  // namespace ringside::probe
