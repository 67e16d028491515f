// NVML: per-device counters and states, straight from the cluster file's nvml entries
// (utilization.gpu measured from the stand-in libcuda's stream activity unless set there).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "nvml_state.h"

using namespace ringside::sim::nvml;

namespace {

template <typename T, typename F>
nvmlReturn_t get(nvmlDevice_t device, T* out, F&& value) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value(*device->state);
  return NVML_SUCCESS;
}

// utilization.gpu as NVML defines it: the share of the last sample period (at least
// 1/6 s, as on the GPUs with the shortest period) during which the GPU ran a kernel,
// here a task of this process's streams on it (the stand-in libcuda's busy time).
// `otherwise` when this process has no stand-in libcuda loaded.
unsigned measured_utilization(unsigned gpu, unsigned otherwise) {
  using Busy = unsigned long long (*)(int);
  static const Busy busy = reinterpret_cast<Busy>(dlsym(RTLD_DEFAULT, "ringsim_gpu_busy_ns"));
  if (busy == nullptr) return otherwise;
  struct Sample {
    std::chrono::steady_clock::time_point at;
    unsigned long long busy_ns = 0;
    unsigned pct = 0;
  };
  static std::mutex mu;
  static std::map<unsigned, Sample> last;
  std::lock_guard<std::mutex> lk(mu);
  const auto now = std::chrono::steady_clock::now();
  auto [it, first] = last.try_emplace(gpu, Sample{init_time(), 0, 0});
  Sample& prev = it->second;
  const double span_ns = std::chrono::duration<double, std::nano>(now - prev.at).count();
  if (!first && span_ns < 1e9 / 6) return prev.pct;
  const unsigned long long b = busy(static_cast<int>(gpu));
  const double share =
      span_ns > 0 ? static_cast<double>(b - std::min(b, prev.busy_ns)) / span_ns : 0;
  prev = Sample{now, b, static_cast<unsigned>(std::lround(100 * std::clamp(share, 0.0, 1.0)))};
  return prev.pct;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz) {
  if (type == NVML_CLOCK_VIDEO)
    return check_device(device) == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : check_device(device);
  return get(device, mhz, [type](const auto& s) {
    return type == NVML_CLOCK_MEM ? s.mem_clock_mhz : s.sm_clock_mhz;
  });
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int* mhz) {
  if (type == NVML_CLOCK_VIDEO)
    return check_device(device) == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : check_device(device);
  return get(device, mhz, [type](const auto& s) {
    return type == NVML_CLOCK_MEM ? s.max_mem_clock_mhz : s.max_sm_clock_mhz;
  });
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* reasons) {
  return get(device, reasons,
             [](const auto& s) { return static_cast<unsigned long long>(s.clock_event_reasons); });
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int* temp) {
  if (sensor != NVML_TEMPERATURE_GPU)
    return check_device(device) == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT
                                                : check_device(device);
  return get(device, temp, [](const auto& s) { return s.temperature_c; });
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t* t) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (t == nullptr || t->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (t->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  t->temperature = static_cast<int>(device->state->temperature_c);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* mw) {
  return get(device, mw, [](const auto& s) { return s.power_mw; });
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* mw) {
  return get(device, mw, [](const auto& s) { return s.power_limit_mw; });
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* mw) {
  return get(device, mw, [](const auto& s) { return s.power_limit_mw; });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* u) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (u == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& s = *device->state;
  u->gpu = s.utilization_gpu_fixed ? s.utilization_gpu_pct
                                   : measured_utilization(device->index, s.utilization_gpu_pct);
  u->memory = s.utilization_memory_pct;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* m) {
  return get(device, m, [](const auto& s) {
    return nvmlMemory_t{s.memory_total_bytes, s.memory_total_bytes - s.memory_used_bytes,
                        s.memory_used_bytes};
  });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* m) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const auto& s = *device->state;
  m->total = s.memory_total_bytes;
  m->reserved = 0;
  m->used = s.memory_used_bytes;
  m->free = s.memory_total_bytes - s.memory_used_bytes;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t type,
                                         nvmlEccCounterType_t counter, unsigned long long* count) {
  if (type != NVML_MEMORY_ERROR_TYPE_CORRECTED && type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (counter != NVML_VOLATILE_ECC && counter != NVML_AGGREGATE_ECC)
    return NVML_ERROR_INVALID_ARGUMENT;
  return get(device, count, [type, counter](const auto& s) -> unsigned long long {
    bool corrected = type == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    if (counter == NVML_VOLATILE_ECC)
      return corrected ? s.ecc_volatile_corrected : s.ecc_volatile_uncorrected;
    return corrected ? s.ecc_aggregate_corrected : s.ecc_aggregate_uncorrected;
  });
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr, unsigned int* unc,
                                       unsigned int* pending, unsigned int* failure) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (corr == nullptr || unc == nullptr || pending == nullptr || failure == nullptr)
    return NVML_ERROR_INVALID_ARGUMENT;
  const auto& s = *device->state;
  *corr = s.remapped_rows_correctable;
  *unc = s.remapped_rows_uncorrectable;
  *pending = s.remap_pending ? 1 : 0;
  *failure = s.remap_failure ? 1 : 0;
  return NVML_SUCCESS;
}

// Row-remapping GPUs (A100 and later) retire no pages; the sim models those, so none.
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t /*cause*/,
                                       unsigned int* count, unsigned long long* /*addresses*/) {
  return get(device, count, [](const auto&) { return 0u; });
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return get(device, value, [](const auto& s) { return s.pcie_replays; });
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return get(device, gen, [](const auto& s) { return s.pcie_gen; });
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return get(device, width, [](const auto& s) { return s.pcie_width; });
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* gen) {
  return get(device, gen, [](const auto& s) { return s.pcie_max_gen; });
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* width) {
  return get(device, width, [](const auto& s) { return s.pcie_max_width; });
}

}  // extern "C"
