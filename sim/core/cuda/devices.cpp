// Device table of the simulated node.
#include "devices.h"

#include <charconv>
#include <string_view>

#include "cluster.h"
#include "sim_ids.h"

namespace ringside::sim {

namespace {

// Physical GPU indices in CUDA_VISIBLE_DEVICES order. As with the real driver, parsing
// stops at the first entry that is not a valid index or UUID of this node.
std::vector<int> visible_gpus(const Node& node) {
  std::vector<int> out;
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) {
    for (int g = 0; g < node.gpus; ++g) out.push_back(g);
    return out;
  }
  std::string_view rest(env);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    int g = -1;
    if (item.rfind("GPU-", 0) == 0) {
      for (int i = 0; i < node.gpus; ++i) {
        if (gpu_uuid_string(node.name, i).rfind(item, 0) == 0) g = i;
      }
    } else {
      auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), g);
      if (ec != std::errc() || p != item.data() + item.size()) g = -1;
    }
    if (g < 0 || g >= node.gpus) break;
    bool dup = false;
    for (int v : out) dup = dup || v == g;
    if (dup) break;
    out.push_back(g);
  }
  return out;
}

}  // namespace

std::vector<Device>& devices() {
  static std::vector<Device>* table = [] {
    const Node& node = cluster().my_node();
    auto* t = new std::vector<Device>();
    for (int g : visible_gpus(node)) {
      Device d;
      d.ordinal = static_cast<int>(t->size());
      d.local_gpu = g;
      d.name = device_name(node.gpu_model);
      d.pci_bus_id = pci_bus_id_cuda(node.name, g);
      PciAddress a = pci_address(node.name, g);
      d.pci_domain = a.domain;
      d.pci_bus = a.bus;
      d.pci_device = a.device;
      d.uuid = gpu_uuid(node.name, g);
      d.total_memory = node.nvml[static_cast<size_t>(g)].memory_total_bytes;
      d.primary_ctx.device = d.ordinal;
      t->push_back(d);
    }
    return t;
  }();
  return *table;
}

}  // namespace ringside::sim
