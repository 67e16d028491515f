// NVML: init/shutdown (reference counted), system queries, device handles, error strings.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>

#include "nvml_state.h"
#include "sim_ids.h"

using namespace ringside::sim;

namespace {

std::mutex g_mu;
int g_refcount = 0;
std::chrono::steady_clock::time_point g_init_time;

nvmlReturn_t copy_string(char* dst, unsigned len, const std::string& src) {
  if (dst == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (len < src.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(dst, src.c_str(), src.size() + 1);
  return NVML_SUCCESS;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

namespace ringside::sim::nvml {

nvmlReturn_t check_initialized() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_refcount > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

std::vector<nvmlDevice_st>& devices() {
  static auto* table = [] {
    auto* t = new std::vector<nvmlDevice_st>();
    const Node& node = cluster().my_node();
    for (int g = 0; g < node.gpus; ++g) {
      nvmlDevice_st d;
      d.index = static_cast<unsigned>(g);
      d.name = device_name(node.gpu_model);
      d.uuid = gpu_uuid_string(node.name, g);
      d.pci_bus_id = pci_bus_id_nvml(node.name, g);
      PciAddress a = pci_address(node.name, g);
      d.pci_domain = a.domain;
      d.pci_bus = a.bus;
      d.pci_device = a.device;
      char legacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
      std::snprintf(legacy, sizeof legacy, "%04X:%02X:%02X.0", a.domain, a.bus, a.device);
      d.pci_bus_id_legacy = legacy;
      d.state = &node.nvml[static_cast<size_t>(g)];
      t->push_back(d);
    }
    return t;
  }();
  return *table;
}

nvmlReturn_t check_device(nvmlDevice_t device) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  auto& all = devices();
  if (device == nullptr || all.empty() || device < &all.front() || device > &all.back())
    return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

std::chrono::steady_clock::time_point init_time() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_init_time;
}

}  // namespace ringside::sim::nvml

using namespace ringside::sim::nvml;

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  (void)cluster();  // a bad cluster file stops the process here, with a message
  (void)devices();
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_refcount++ == 0 && g_init_time == std::chrono::steady_clock::time_point{})
    g_init_time = std::chrono::steady_clock::now();
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlInit(void) {
  return nvmlInit_v2();
}
nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  --g_refcount;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized (call nvmlInit first)";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported (not implemented by the ringside sim)";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  return copy_string(version, length, "580.00-ringside-sim");
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  return copy_string(version, length, "13.580.00-ringside-sim");
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) {
  if (v == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *v = 13000;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  return nvmlSystemGetCudaDriverVersion(v);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(devices().size());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return nvmlDeviceGetCount_v2(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  if (device == nullptr || index >= devices().size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices()[index];
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  PciAddress a;
  if (bus_id == nullptr || device == nullptr || !parse_pci_bus_id(bus_id, &a))
    return NVML_ERROR_INVALID_ARGUMENT;
  for (nvmlDevice_st& d : devices()) {
    if (d.pci_domain == a.domain && d.pci_bus == a.bus && d.pci_device == a.device) {
      *device = &d;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (nvmlDevice_st& d : devices()) {
    if (lower(d.uuid) == lower(uuid)) {
      *device = &d;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = device->index;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return nvmlDeviceGetIndex(device, minor);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  return copy_string(name, length, device->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  return copy_string(uuid, length, device->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", device->pci_bus_id_legacy.c_str());
  std::snprintf(pci->busId, sizeof pci->busId, "%s", device->pci_bus_id.c_str());
  pci->domain = device->pci_domain;
  pci->bus = device->pci_bus;
  pci->device = device->pci_device;
  pci->pciDeviceId = 0x233010de;  // an H100-like device id with NVIDIA's vendor id
  return NVML_SUCCESS;
}
// The older nvmlDeviceGetPciInfo / _v2 used other struct layouts and are not exported.

}  // extern "C"
