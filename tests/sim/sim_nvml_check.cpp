// Loads NVML at run time through include/ringside/nvml_abi.h, as the probe does, and prints
// what it reports for one GPU as key=value lines:
//   sim_nvml_check GPU_INDEX XID_WAIT_MS
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ringside/nvml_abi.h"

#define LOAD(name) auto p_##name = reinterpret_cast<decltype(&name)>(dlsym(lib, #name))

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sim_nvml_check GPU_INDEX XID_WAIT_MS\n");
    return 2;
  }
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen libnvidia-ml.so.1: %s\n", dlerror());
    return 2;
  }
  LOAD(nvmlInit_v2);
  LOAD(nvmlDeviceGetCount_v2);
  LOAD(nvmlDeviceGetHandleByIndex_v2);
  LOAD(nvmlDeviceGetHandleByPciBusId_v2);
  LOAD(nvmlDeviceGetHandleByUUID);
  LOAD(nvmlDeviceGetName);
  LOAD(nvmlDeviceGetUUID);
  LOAD(nvmlDeviceGetPciInfo_v3);
  LOAD(nvmlDeviceGetClockInfo);
  LOAD(nvmlDeviceGetMaxClockInfo);
  LOAD(nvmlDeviceGetCurrentClocksEventReasons);
  LOAD(nvmlDeviceGetTemperature);
  LOAD(nvmlDeviceGetTotalEccErrors);
  LOAD(nvmlDeviceGetRemappedRows);
  LOAD(nvmlDeviceGetPcieReplayCounter);
  LOAD(nvmlEventSetCreate);
  LOAD(nvmlDeviceRegisterEvents);
  LOAD(nvmlEventSetWait_v2);
  LOAD(nvmlErrorString);
  if (p_nvmlInit_v2 == nullptr || p_nvmlEventSetWait_v2 == nullptr ||
      p_nvmlDeviceGetRemappedRows == nullptr) {
    std::fprintf(stderr, "missing NVML symbols\n");
    return 2;
  }
  std::printf("uninitialized=%s\n",
              p_nvmlDeviceGetCount_v2(nullptr) == NVML_ERROR_UNINITIALIZED ? "yes" : "no");
  if (p_nvmlInit_v2() != NVML_SUCCESS) return 2;
  auto start = std::chrono::steady_clock::now();
  unsigned count = 0;
  p_nvmlDeviceGetCount_v2(&count);
  std::printf("count=%u\n", count);
  nvmlDevice_t dev = nullptr;
  if (p_nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(std::atoi(argv[1])), &dev) !=
      NVML_SUCCESS)
    return 2;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_BUFFER_SIZE];
  p_nvmlDeviceGetName(dev, name, sizeof name);
  p_nvmlDeviceGetUUID(dev, uuid, sizeof uuid);
  nvmlPciInfo_t pci;
  p_nvmlDeviceGetPciInfo_v3(dev, &pci);
  nvmlDevice_t by_pci = nullptr, by_uuid = nullptr;
  p_nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &by_pci);
  p_nvmlDeviceGetHandleByUUID(uuid, &by_uuid);
  std::printf("name=%s\nuuid=%s\nbus_id=%s\nlookup_ok=%d\n", name, uuid, pci.busId,
              by_pci == dev && by_uuid == dev);
  unsigned sm = 0, max_sm = 0, temp = 0, corr = 0, unc = 0, pending = 0, failure = 0, replays = 0;
  unsigned long long reasons = 0, ecc = 0;
  p_nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &sm);
  p_nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &max_sm);
  p_nvmlDeviceGetCurrentClocksEventReasons(dev, &reasons);
  p_nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &temp);
  p_nvmlDeviceGetTotalEccErrors(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ecc);
  p_nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure);
  p_nvmlDeviceGetPcieReplayCounter(dev, &replays);
  std::printf(
      "sm_clock=%u\nmax_sm_clock=%u\nreasons=%llu\ntemperature=%u\necc_volatile_uncorrected=%llu\n",
      sm, max_sm, reasons, temp, ecc);
  std::printf(
      "remapped_correctable=%u\nremapped_uncorrectable=%u\nremap_pending=%u\npcie_replays=%u\n",
      corr, unc, pending, replays);
  nvmlEventSet_t set = nullptr;
  p_nvmlEventSetCreate(&set);
  p_nvmlDeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, set);
  nvmlEventData_t ev{};
  nvmlReturn_t r = p_nvmlEventSetWait_v2(set, &ev, static_cast<unsigned>(std::atoi(argv[2])));
  double after =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (r == NVML_SUCCESS)
    std::printf("xid=%llu\nxid_after_ms=%.0f\n", ev.eventData, after);
  else
    std::printf("xid_wait=%s\n", p_nvmlErrorString(r));
  return 0;
}
