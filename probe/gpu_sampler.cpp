// GPU counters: a sampling thread at RINGSIDE_SAMPLE_HZ and an XID thread
// blocked in nvmlEventSetWait.  Devices are the CUDA devices the
// communicators use, matched to NVML by PCI bus id (CUDA and NVML orders
// differ under CUDA_VISIBLE_DEVICES).  Slow queries (ECC, remapped rows,
// PCIe replays) run every kSlowPeriodNs, not every sample.
#include <time.h>

#include <array>
#include <cstdint>

#include "background.h"
#include "cuda_driver.h"
#include "nvml_loader.h"
#include "runtime.h"
#include "thread_util.h"

namespace ringside::probe {

namespace {

constexpr int kMaxDevices = 64;
constexpr int64_t kSlowPeriodNs = 10'000'000'000;
constexpr unsigned kXidWaitMs = 200;

struct DeviceSampler {
  nvmlDevice_t handle = nullptr;
  bool tried = false;
  uint32_t unsupported = 0;  // SampleValid bits NVML said it cannot read
  int64_t last_slow = 0;
  trace::SampleRecord slow{};  // last slow readings, carried into every sample
};

void sleep_ns(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  nanosleep(&ts, nullptr);
}

nvmlDevice_t nvml_handle(int ordinal) {
  const CudaDriver& cu = cuda_driver();
  CUdevice dev = 0;
  char bus[64] = {};
  if (!cu.loaded || ordinal < 0 || cu.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
      cu.cuDeviceGetPCIBusId == nullptr ||
      cu.cuDeviceGetPCIBusId(bus, sizeof bus - 1, dev) != CUDA_SUCCESS) {
    return nullptr;
  }
  nvmlDevice_t h = nullptr;
  return nvml().device_by_pci_bus_id(bus, &h) == NVML_SUCCESS ? h : nullptr;
}

// Calls an NVML query unless it reported NOT_SUPPORTED before.
template <typename F>
bool read(DeviceSampler& d, uint32_t bit, F&& query) {
  if (d.unsupported & bit) return false;
  const nvmlReturn_t rc = query();
  if (rc == NVML_ERROR_NOT_SUPPORTED) d.unsupported |= bit;
  return rc == NVML_SUCCESS;
}

void sample(Runtime& rt, DeviceSampler& d, int ordinal) {
  const Nvml& n = nvml();
  trace::SampleRecord s{};
  const int64_t now = now_ns();
  s.t_ns = now - rt.meta.clock_monotonic_ns;
  s.device = ordinal;
  unsigned int a = 0;
  unsigned int b = 0;
  if (n.clock_info && read(d, trace::kValidClocks, [&] {
        nvmlReturn_t rc = n.clock_info(d.handle, NVML_CLOCK_SM, &a);
        return rc == NVML_SUCCESS ? n.clock_info(d.handle, NVML_CLOCK_MEM, &b) : rc;
      })) {
    s.sm_clock_mhz = a;
    s.mem_clock_mhz = b;
    s.valid |= trace::kValidClocks;
  }
  unsigned long long reasons = 0;
  if (n.clock_event_reasons && read(d, trace::kValidClockReasons,
                                    [&] { return n.clock_event_reasons(d.handle, &reasons); })) {
    s.clock_event_reasons = reasons;
    s.valid |= trace::kValidClockReasons;
  }
  if (n.temperature && read(d, trace::kValidTemperature,
                            [&] { return n.temperature(d.handle, NVML_TEMPERATURE_GPU, &a); })) {
    s.temperature_c = a;
    s.valid |= trace::kValidTemperature;
  }
  if (n.power_usage && read(d, trace::kValidPower, [&] { return n.power_usage(d.handle, &a); })) {
    s.power_mw = a;
    s.valid |= trace::kValidPower;
  }
  nvmlUtilization_t u{};
  if (n.utilization &&
      read(d, trace::kValidUtilization, [&] { return n.utilization(d.handle, &u); })) {
    s.util_gpu_pct = u.gpu;
    s.util_mem_pct = u.memory;
    s.valid |= trace::kValidUtilization;
  }
  nvmlMemory_t m{};
  if (n.memory_info && read(d, trace::kValidMemory, [&] { return n.memory_info(d.handle, &m); })) {
    s.mem_used_bytes = m.used;
    s.valid |= trace::kValidMemory;
  }
  if (d.last_slow == 0 || now - d.last_slow >= kSlowPeriodNs) {
    d.last_slow = now;
    trace::SampleRecord& slow = d.slow;
    slow.valid = 0;
    unsigned long long c = 0;
    unsigned long long uc = 0;
    if (n.total_ecc_errors && read(d, trace::kValidEcc, [&] {
          nvmlReturn_t rc =
              n.total_ecc_errors(d.handle, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c);
          return rc == NVML_SUCCESS
                     ? n.total_ecc_errors(d.handle, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                          NVML_VOLATILE_ECC, &uc)
                     : rc;
        })) {
      slow.ecc_corrected = c;
      slow.ecc_uncorrected = uc;
      slow.valid |= trace::kValidEcc;
    }
    unsigned int pending = 0;
    unsigned int failure = 0;
    if (n.remapped_rows && read(d, trace::kValidRemappedRows, [&] {
          return n.remapped_rows(d.handle, &a, &b, &pending, &failure);
        })) {
      slow.remapped_rows = a + b;
      slow.valid |= trace::kValidRemappedRows;
    }
    if (n.pcie_replay_counter &&
        read(d, trace::kValidPcieReplays, [&] { return n.pcie_replay_counter(d.handle, &a); })) {
      slow.pcie_replays = a;
      slow.valid |= trace::kValidPcieReplays;
    }
  }
  s.ecc_corrected = d.slow.ecc_corrected;
  s.ecc_uncorrected = d.slow.ecc_uncorrected;
  s.remapped_rows = d.slow.remapped_rows;
  s.pcie_replays = d.slow.pcie_replays;
  s.valid |= d.slow.valid;
  rt.samples.push(s);
}

// Adds devices that communicators started using; returns the mask handled.
template <typename F>
uint64_t attach_new_devices(Runtime& rt, uint64_t known, F&& on_device) {
  const uint64_t mask = rt.device_mask.load(std::memory_order_acquire);
  for (int i = 0; i < kMaxDevices; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    if ((mask & bit) && !(known & bit)) on_device(i);
  }
  return mask;
}

void sampler_loop(Runtime& rt) {
  std::array<DeviceSampler, kMaxDevices> devices{};
  uint64_t known = 0;
  const int64_t period = static_cast<int64_t>(1e9 / rt.config.sample_hz);
  while (!rt.stopping.load(std::memory_order_acquire)) {
    known = attach_new_devices(rt, known, [&](int i) {
      devices[i].handle = nvml_handle(i);
      devices[i].tried = true;
      if (devices[i].handle == nullptr) {
        emit_event(trace::EventKind::kWarning, 0, 0, i, i, "no NVML device for CUDA device %d", i);
      }
    });
    for (int i = 0; i < kMaxDevices; ++i) {
      if (devices[i].handle != nullptr) sample(rt, devices[i], i);
    }
    // Sleep in short steps so that shutdown never waits a whole period.
    for (int64_t slept = 0; slept < period && !rt.stopping.load(std::memory_order_acquire);
         slept += 50'000'000) {
      sleep_ns(period - slept < 50'000'000 ? period - slept : 50'000'000);
    }
  }
}

void xid_loop(Runtime& rt) {
  const Nvml& n = nvml();
  nvmlEventSet_t set = nullptr;
  if (!n.event_set_create || !n.register_events || !n.event_set_wait ||
      n.event_set_create(&set) != NVML_SUCCESS) {
    emit_event(trace::EventKind::kWarning, 0, 0, 0, -1,
               "NVML event sets unavailable: no XID events");
    return;
  }
  std::array<nvmlDevice_t, kMaxDevices> handles{};
  uint64_t known = 0;
  while (!rt.stopping.load(std::memory_order_acquire)) {
    known = attach_new_devices(rt, known, [&](int i) {
      handles[i] = nvml_handle(i);
      if (handles[i] == nullptr) return;
      const nvmlReturn_t rc = n.register_events(handles[i], nvmlEventTypeXidCriticalError, set);
      if (rc != NVML_SUCCESS) {
        emit_event(trace::EventKind::kWarning, 0, 0, rc, i,
                   "XID events unavailable on device %d: %d", i, rc);
      }
    });
    if (known == 0) {
      sleep_ns(kXidWaitMs * 1'000'000ll);
      continue;
    }
    nvmlEventData_t data{};
    const nvmlReturn_t rc = n.event_set_wait(set, &data, kXidWaitMs);
    if (rc == NVML_SUCCESS && (data.eventType & nvmlEventTypeXidCriticalError)) {
      int ordinal = -1;
      for (int i = 0; i < kMaxDevices; ++i) {
        if (handles[i] != nullptr && handles[i] == data.device) ordinal = i;
      }
      emit_event(trace::EventKind::kXid, 0, 0, static_cast<int64_t>(data.eventData), ordinal,
                 "XID %llu", data.eventData);
      request_flush();
    } else if (rc != NVML_SUCCESS && rc != NVML_ERROR_TIMEOUT) {
      sleep_ns(kXidWaitMs * 1'000'000ll);  // keep a broken event set from spinning
    }
  }
}

template <typename F>
bool start_helper(Runtime& rt, F body, std::string& error) {
  rt.helper_threads_running.fetch_add(1);
  const bool ok = start_background_thread(
      "ringside-gpu",
      [&rt, body] {
        t_in_probe = true;
        body();
        rt.helper_threads_running.fetch_sub(1);
      },
      error);
  if (!ok) rt.helper_threads_running.fetch_sub(1);
  return ok;
}

}  // namespace

bool start_gpu_sampler(Runtime& rt, std::string& error) {
  // NVML start-up can be slow: it happens on the sampler thread, not the caller's.
  return start_helper(
      rt,
      [&rt] {
        const Nvml& n = nvml();
        if (!n.loaded) {
          log_warning("GPU counters and XID events are off: %s", n.error.c_str());
          emit_event(trace::EventKind::kWarning, 0, 0, 0, -1, "NVML unavailable: no GPU counters");
          return;
        }
        if (rt.config.xid_events) {
          std::string err;
          if (!start_helper(
                  rt, [&rt] { xid_loop(rt); }, err))
            log_warning("no XID thread: %s", err.c_str());
        }
        if (rt.config.sample_hz > 0) sampler_loop(rt);
      },
      error);
}

}  // namespace ringside::probe
