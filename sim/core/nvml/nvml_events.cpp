// NVML events: each configured XID of a registered GPU is delivered once per event set, at
// its at_seconds after the process's nvmlInit.
#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "nvml_state.h"

using namespace ringside::sim;
using namespace ringside::sim::nvml;

struct nvmlEventSet_st {
  struct Pending {
    nvmlDevice_t device;
    XidEvent xid;
  };
  std::mutex mu;
  std::vector<Pending> pending;  // registered, not yet delivered
};

namespace {
constexpr unsigned long long kSupported = nvmlEventTypeXidCriticalError;
}

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = new nvmlEventSet_st();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* types) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (types == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *types = kSupported;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                      nvmlEventSet_t set) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((types & ~kSupported) != 0)
    return NVML_ERROR_NOT_SUPPORTED;  // as NVML does for unsupported types
  if ((types & nvmlEventTypeXidCriticalError) == 0) return NVML_SUCCESS;
  std::lock_guard<std::mutex> lk(set->mu);
  for (auto& p : set->pending)
    if (p.device == device) return NVML_SUCCESS;  // already registered
  for (const XidEvent& x : device->state->xids) set->pending.push_back({device, x});
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeout_ms) {
  if (nvmlReturn_t r = check_initialized(); r != NVML_SUCCESS) return r;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto t0 = init_time();
  nvmlEventSet_st::Pending next{};
  std::chrono::steady_clock::time_point due;
  {
    std::lock_guard<std::mutex> lk(set->mu);
    auto it = std::min_element(
        set->pending.begin(), set->pending.end(),
        [](const auto& a, const auto& b) { return a.xid.at_seconds < b.xid.at_seconds; });
    if (it == set->pending.end() ||
        (due = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(it->xid.at_seconds))) > deadline) {
      std::this_thread::sleep_until(deadline);
      return NVML_ERROR_TIMEOUT;
    }
    next = *it;
    set->pending.erase(it);
  }
  std::this_thread::sleep_until(due);
  data->device = next.device;
  data->eventType = nvmlEventTypeXidCriticalError;
  data->eventData = next.xid.code;
  data->gpuInstanceId = 0xFFFFFFFFu;
  data->computeInstanceId = 0xFFFFFFFFu;
  return NVML_SUCCESS;
}
// The unversioned nvmlEventSetWait used a shorter nvmlEventData_t and is not exported.

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete set;
  return NVML_SUCCESS;
}

}  // extern "C"
