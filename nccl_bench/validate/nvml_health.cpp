#include "validate/nvml_health.h"

#include <dlfcn.h>

#include <cstdio>

#include "ringside/dyn_lib.h"
#include "ringside/nvml_abi.h"

namespace ringside::bench {

namespace {

// Reasons that mean the GPU is slowed by something wrong; power cap alone is a warning.
constexpr unsigned long long kFailReasons =
    nvmlClocksThrottleReasonHwSlowdown | nvmlClocksEventReasonSwThermalSlowdown |
    nvmlClocksThrottleReasonHwThermalSlowdown | nvmlClocksThrottleReasonHwPowerBrakeSlowdown;

std::string fmt(const char* f, unsigned long long a, unsigned long long b = 0,
                unsigned long long c = 0, unsigned long long d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

}  // namespace

std::string clock_reason_names(unsigned long long mask) {
  static constexpr struct {
    unsigned long long bit;
    const char* name;
  } kNames[] = {
      {nvmlClocksEventReasonGpuIdle, "gpu_idle"},
      {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks"},
      {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
      {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
      {nvmlClocksEventReasonSyncBoost, "sync_boost"},
      {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
      {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
      {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {nvmlClocksEventReasonDisplayClockSetting, "display_clock"},
  };
  std::string out;
  for (const auto& n : kNames) {
    if (mask & n.bit) out += std::string(out.empty() ? "" : ", ") + n.name;
  }
  return out.empty() ? "none" : out;
}

struct GpuHealthSession::Impl {
  void* lib = nullptr;
  bool initialized = false;
  nvmlDevice_t dev = nullptr;
  nvmlEventSet_t events = nullptr;
  std::string setup_error;  // non-empty: could not inspect the GPU

  decltype(&nvmlErrorString) error_string = nullptr;
  const char* err(nvmlReturn_t r) const {
    return error_string ? error_string(r) : "unknown NVML error";
  }
};

GpuHealthSession::GpuHealthSession(const std::string& pci_bus_id, int device)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  std::string why;
  m.lib = open_library("libnvidia-ml.so.1", why);
  if (m.lib == nullptr) {
    m.setup_error = "NVML not available (" + why + "); install the NVIDIA driver's NVML library";
    return;
  }
  m.error_string = symbol<decltype(&nvmlErrorString)>(m.lib, {"nvmlErrorString"});
  auto init = symbol<decltype(&nvmlInit_v2)>(m.lib, {"nvmlInit_v2"});
  if (init == nullptr) {
    m.setup_error = "libnvidia-ml.so.1 has no nvmlInit_v2";
    return;
  }
  if (nvmlReturn_t r = init(); r != NVML_SUCCESS) {
    m.setup_error = std::string("nvmlInit_v2 failed: ") + m.err(r);
    return;
  }
  m.initialized = true;
  auto by_bus = symbol<decltype(&nvmlDeviceGetHandleByPciBusId_v2)>(
      m.lib, {"nvmlDeviceGetHandleByPciBusId_v2"});
  auto by_index =
      symbol<decltype(&nvmlDeviceGetHandleByIndex_v2)>(m.lib, {"nvmlDeviceGetHandleByIndex_v2"});
  nvmlReturn_t r = NVML_ERROR_NOT_FOUND;
  if (by_bus != nullptr && !pci_bus_id.empty()) r = by_bus(pci_bus_id.c_str(), &m.dev);
  if (r != NVML_SUCCESS && by_index != nullptr) r = by_index(static_cast<unsigned>(device), &m.dev);
  if (r != NVML_SUCCESS) {
    m.setup_error = "NVML does not know GPU " + pci_bus_id + " (index " + std::to_string(device) +
                    "): " + m.err(r);
    m.dev = nullptr;
    return;
  }
  auto create = symbol<decltype(&nvmlEventSetCreate)>(m.lib, {"nvmlEventSetCreate"});
  auto reg = symbol<decltype(&nvmlDeviceRegisterEvents)>(m.lib, {"nvmlDeviceRegisterEvents"});
  if (create != nullptr && reg != nullptr && create(&m.events) == NVML_SUCCESS) {
    if (reg(m.dev, nvmlEventTypeXidCriticalError, m.events) != NVML_SUCCESS) {
      auto free_set = symbol<decltype(&nvmlEventSetFree)>(m.lib, {"nvmlEventSetFree"});
      if (free_set) free_set(m.events);
      m.events = nullptr;
    }
  }
}

GpuHealthSession::~GpuHealthSession() {
  Impl& m = *impl_;
  if (m.lib == nullptr) return;
  if (m.events != nullptr) {
    if (auto free_set = symbol<decltype(&nvmlEventSetFree)>(m.lib, {"nvmlEventSetFree"}))
      free_set(m.events);
  }
  if (m.initialized) {
    if (auto shutdown = symbol<decltype(&nvmlShutdown)>(m.lib, {"nvmlShutdown"})) shutdown();
  }
  dlclose(m.lib);
}

GpuHealth GpuHealthSession::finish(const std::string& label) {
  Impl& m = *impl_;
  GpuHealth h;
  if (!m.setup_error.empty()) {
    h.fail.push_back(label + ": " + m.setup_error);
    return h;
  }
  const std::string p = label + ": ";
  if (m.events == nullptr) {
    h.warn.push_back(p + "XID events not available from NVML");
  } else if (auto wait = symbol<decltype(&nvmlEventSetWait_v2)>(m.lib, {"nvmlEventSetWait_v2"})) {
    nvmlEventData_t ev{};
    for (int i = 0; i < 64 && wait(m.events, &ev, 0) == NVML_SUCCESS; ++i) {
      if (ev.eventType & nvmlEventTypeXidCriticalError) {
        h.fail.push_back(p + fmt("XID %llu reported during the test", ev.eventData));
      }
    }
  }

  auto ecc = symbol<decltype(&nvmlDeviceGetTotalEccErrors)>(m.lib, {"nvmlDeviceGetTotalEccErrors"});
  unsigned long long n = 0;
  if (ecc &&
      ecc(m.dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &n) == NVML_SUCCESS &&
      n > 0) {
    h.fail.push_back(p + fmt("%llu uncorrected ECC errors since the driver loaded", n));
  }
  if (ecc &&
      ecc(m.dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &n) == NVML_SUCCESS &&
      n > 0) {
    h.warn.push_back(p + fmt("%llu uncorrected ECC errors over the GPU's lifetime", n));
  }
  if (ecc && ecc(m.dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &n) == NVML_SUCCESS &&
      n > 0) {
    h.warn.push_back(p + fmt("%llu corrected ECC errors since the driver loaded", n));
  }

  if (auto rows =
          symbol<decltype(&nvmlDeviceGetRemappedRows)>(m.lib, {"nvmlDeviceGetRemappedRows"})) {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (rows(m.dev, &corr, &unc, &pending, &failure) == NVML_SUCCESS) {
      if (failure) h.fail.push_back(p + "row remapping failed: the GPU needs service");
      if (pending) h.fail.push_back(p + "row remapping pending: reset the GPU");
      if (unc > 0) h.warn.push_back(p + fmt("%llu rows remapped for uncorrectable errors", unc));
      if (corr > 0) h.warn.push_back(p + fmt("%llu rows remapped for correctable errors", corr));
    }
  }

  auto reasons_fn = symbol<decltype(&nvmlDeviceGetCurrentClocksEventReasons)>(
      m.lib,
      {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  auto clock = symbol<decltype(&nvmlDeviceGetClockInfo)>(m.lib, {"nvmlDeviceGetClockInfo"});
  auto max_clock =
      symbol<decltype(&nvmlDeviceGetMaxClockInfo)>(m.lib, {"nvmlDeviceGetMaxClockInfo"});
  unsigned sm = 0, sm_max = 0;
  const bool clocks = clock && max_clock && clock(m.dev, NVML_CLOCK_SM, &sm) == NVML_SUCCESS &&
                      max_clock(m.dev, NVML_CLOCK_SM, &sm_max) == NVML_SUCCESS && sm_max > 0;
  const std::string clock_text =
      clocks ? fmt(", SM clock %llu of %llu MHz", sm, sm_max) : std::string();
  unsigned long long reasons = 0;
  if (reasons_fn && reasons_fn(m.dev, &reasons) == NVML_SUCCESS) {
    if (reasons & kFailReasons) {
      h.fail.push_back(p + "clocks slowed by " + clock_reason_names(reasons & kFailReasons) +
                       clock_text);
    } else if (reasons & nvmlClocksEventReasonSwPowerCap) {
      h.warn.push_back(p + "clocks held by the software power cap" + clock_text);
    }
  }
  if (clocks && !(reasons & (kFailReasons | nvmlClocksEventReasonGpuIdle)) && sm * 2 < sm_max) {
    h.warn.push_back(p + fmt("SM clock %llu MHz is below half its maximum %llu MHz", sm, sm_max));
  }

  auto gen = symbol<decltype(&nvmlDeviceGetCurrPcieLinkGeneration)>(
      m.lib, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  auto gen_max = symbol<decltype(&nvmlDeviceGetMaxPcieLinkGeneration)>(
      m.lib, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  auto width =
      symbol<decltype(&nvmlDeviceGetCurrPcieLinkWidth)>(m.lib, {"nvmlDeviceGetCurrPcieLinkWidth"});
  auto width_max =
      symbol<decltype(&nvmlDeviceGetMaxPcieLinkWidth)>(m.lib, {"nvmlDeviceGetMaxPcieLinkWidth"});
  unsigned g = 0, gm = 0, w = 0, wm = 0;
  if (gen && gen_max && width && width_max && gen(m.dev, &g) == NVML_SUCCESS &&
      gen_max(m.dev, &gm) == NVML_SUCCESS && width(m.dev, &w) == NVML_SUCCESS &&
      width_max(m.dev, &wm) == NVML_SUCCESS) {
    if (w < wm || g < gm) {
      h.fail.push_back(
          p + fmt("PCIe link degraded: gen%llu x%llu, maximum gen%llu x%llu", g, w, gm, wm));
    }
  }
  if (auto replay = symbol<decltype(&nvmlDeviceGetPcieReplayCounter)>(
          m.lib, {"nvmlDeviceGetPcieReplayCounter"})) {
    unsigned count = 0;
    if (replay(m.dev, &count) == NVML_SUCCESS && count > 0) {
      h.warn.push_back(p + fmt("%llu PCIe replays", count));
    }
  }
  return h;
}

}  // namespace ringside::bench
