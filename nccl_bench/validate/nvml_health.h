// NVML health of one GPU, read through libnvidia-ml.so.1 loaded at run time
// (declarations in include/ringside/nvml_abi.h; no link-time NVML dependency).
//
// A session starts before the bandwidth tests (XID events are only delivered
// after registration) and is finished after them, when links and clocks are in
// their working state.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace ringside::bench {

struct GpuHealth {
  std::vector<std::string> fail;  // reasons that fail the node
  std::vector<std::string> warn;  // worth a look, not a failure
};

class GpuHealthSession {
 public:
  // Finds the GPU by PCI bus id (as cudaDeviceGetPCIBusId prints it), else by
  // NVML index `device`.  Never throws: problems are reported by finish().
  GpuHealthSession(const std::string& pci_bus_id, int device);
  ~GpuHealthSession();
  GpuHealthSession(const GpuHealthSession&) = delete;
  GpuHealthSession& operator=(const GpuHealthSession&) = delete;

  // `label` (e.g. "GPU 3 (0000:1b:00.0)") prefixes every message.  When NVML
  // could not be loaded or the GPU not found, that is a failure: validate never
  // passes a GPU it could not inspect.
  GpuHealth finish(const std::string& label);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// "sw_thermal_slowdown, hw_slowdown" for a clock-event reason mask.
std::string clock_reason_names(unsigned long long mask);

}  // namespace ringside::bench
