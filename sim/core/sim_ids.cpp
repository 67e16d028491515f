// Derives PCI addresses and UUIDs from (node name, GPU index) by hashing, so every process
// computes the same identity for the same GPU without talking to the others.
#include "sim_ids.h"

#include <cctype>
#include <cstdio>

namespace ringside::sim {

namespace {

uint64_t fnv1a(std::string_view text, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool parse_hex(std::string_view s, unsigned* out) {
  if (s.empty() || s.size() > 8) return false;
  unsigned v = 0;
  for (char c : s) {
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (std::tolower(static_cast<unsigned char>(c)) >= 'a' &&
               std::tolower(static_cast<unsigned char>(c)) <= 'f')
                ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<unsigned>(d);
  }
  *out = v;
  return true;
}

}  // namespace

PciAddress pci_address(std::string_view node, int gpu) {
  PciAddress a;
  a.domain = static_cast<unsigned>(fnv1a(node, 0) & 0xffff);
  a.bus = 0x18 + static_cast<unsigned>(gpu);
  return a;
}

std::string pci_bus_id_nvml(std::string_view node, int gpu) {
  PciAddress a = pci_address(node, gpu);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.0", a.domain, a.bus, a.device);
  return buf;
}

std::string pci_bus_id_cuda(std::string_view node, int gpu) {
  PciAddress a = pci_address(node, gpu);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.0", a.domain, a.bus, a.device);
  return buf;
}

bool parse_pci_bus_id(std::string_view text, PciAddress* out) {
  // domain:bus:device.function
  size_t c1 = text.find(':');
  size_t c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
  size_t dot = c2 == std::string_view::npos ? c2 : text.find('.', c2 + 1);
  if (dot == std::string_view::npos) return false;
  unsigned function = 0;
  PciAddress a;
  if (!parse_hex(text.substr(0, c1), &a.domain) ||
      !parse_hex(text.substr(c1 + 1, c2 - c1 - 1), &a.bus) ||
      !parse_hex(text.substr(c2 + 1, dot - c2 - 1), &a.device) ||
      !parse_hex(text.substr(dot + 1), &function))
    return false;
  *out = a;
  return true;
}

std::array<uint8_t, 16> gpu_uuid(std::string_view node, int gpu) {
  std::string key = std::string(node) + "/" + std::to_string(gpu);
  uint64_t h1 = fnv1a(key, 0x5eed), h2 = fnv1a(key, 0xfeed);
  std::array<uint8_t, 16> u{};
  for (int i = 0; i < 8; ++i) {
    u[static_cast<size_t>(i)] = static_cast<uint8_t>(h1 >> (8 * i));
    u[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(h2 >> (8 * i));
  }
  return u;
}

std::string gpu_uuid_string(std::string_view node, int gpu) {
  auto u = gpu_uuid(node, gpu);
  std::string s = "GPU-";
  char buf[3];
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(buf, sizeof buf, "%02x", u[i]);
    s += buf;
  }
  return s;
}

std::string device_name(std::string_view gpu_model) {
  return kDeviceNamePrefix + std::string(gpu_model);
}

}  // namespace ringside::sim
