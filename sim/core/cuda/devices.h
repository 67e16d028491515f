// The devices this process sees: the GPUs of its node (cluster model), filtered and
// reordered by CUDA_VISIBLE_DEVICES like the real driver does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CUctx_st {
  int device;  // primary context of this ordinal
};

namespace ringside::sim {

struct Device {
  int ordinal = 0;
  int local_gpu = 0;  // index on the node
  std::string name;   // "ringside-sim <model>"
  std::string pci_bus_id;
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0;
  std::array<uint8_t, 16> uuid{};
  size_t total_memory = 0;
  CUctx_st primary_ctx{};
  int primary_refcount = 0;  // guarded by devices_mutex()
};

// Built once from the cluster model; stable addresses.
std::vector<Device>& devices();
inline int device_count() {
  return static_cast<int>(devices().size());
}
inline bool valid_device(int d) {
  return d >= 0 && d < device_count();
}

}  // namespace ringside::sim
