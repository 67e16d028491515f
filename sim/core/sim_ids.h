// Stable identities of a simulated GPU, shared by the CUDA and NVML stand-ins so that
// both report the same PCI bus id and UUID for (node name, local GPU index).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ringside::sim {

struct PciAddress {
  unsigned domain = 0;  // 16-bit hash of the node name: unique per node in practice
  unsigned bus = 0;     // 0x18 + gpu
  unsigned device = 0;
};

PciAddress pci_address(std::string_view node, int gpu);
// "0000abcd:18:00.0" (NVML busId format: 8 hex digits of domain, upper case).
std::string pci_bus_id_nvml(std::string_view node, int gpu);
// "abcd:18:00.0" (CUDA format: 4 hex digits of domain, lower case).
std::string pci_bus_id_cuda(std::string_view node, int gpu);
// Parses either format (any case); false when malformed.
bool parse_pci_bus_id(std::string_view text, PciAddress* out);

std::array<uint8_t, 16> gpu_uuid(std::string_view node, int gpu);
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and NVML print it.
std::string gpu_uuid_string(std::string_view node, int gpu);

// Device name reported by CUDA and NVML: "ringside-sim <model>". The trace library marks a
// trace as simulated from this prefix.
inline constexpr const char* kDeviceNamePrefix = "ringside-sim ";
std::string device_name(std::string_view gpu_model);

}  // namespace ringside::sim
