// Runs on the sim (LD_LIBRARY_PATH) although linked normally against NVIDIA's libcudart and
// libcuda: exercises what the examples, nccl_bench and the probe rely on and prints one
// "FAIL ..." line per broken expectation (exit 1), or measurements for the timing tests.
//   sim_cuda_check basic            -> functional checks, exit 0 when all pass
//   sim_cuda_check hostfunc_ms MS   -> prints the event-timed duration of a MS-long host func
#include <cuda.h>
#include <dlfcn.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ringside/nvml_abi.h"

namespace {

int g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL %s\n", what.c_str());
    ++g_failures;
  }
}

void sleep_ms_fn(void* arg) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(arg)));
}

struct Order {
  std::atomic<int> next{0};
  std::vector<int> seen;
};
struct Step {
  Order* order;
  int id;
};
void record_step(void* arg) {
  auto* s = static_cast<Step*>(arg);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  s->order->seen.push_back(s->id);
}

void check_devices() {
  int n = 0;
  cudaError_t count_status = cudaGetDeviceCount(&n);
  expect(count_status == cudaSuccess && n == 8, "8 devices by default, got " + std::to_string(n));
  cudaDeviceProp p;
  expect(cudaGetDeviceProperties(&p, 0) == cudaSuccess, "cudaGetDeviceProperties");
  expect(std::strncmp(p.name, "ringside-sim ", 13) == 0,
         std::string("device name has the sim prefix: ") + p.name);
  char a[32], b[32];
  cudaDeviceGetPCIBusId(a, sizeof a, 0);
  cudaDeviceGetPCIBusId(b, sizeof b, 1);
  expect(std::strcmp(a, b) != 0, "PCI bus ids differ per GPU");
  int dev = -1;
  expect(cudaDeviceGetByPCIBusId(&dev, b) == cudaSuccess && dev == 1,
         "cudaDeviceGetByPCIBusId round trip");
  expect(cudaSetDevice(3) == cudaSuccess && cudaGetDevice(&dev) == cudaSuccess && dev == 3,
         "set/get device");
  expect(cudaSetDevice(99) == cudaErrorInvalidDevice, "invalid device rejected");
  expect(cudaGetLastError() == cudaErrorInvalidDevice && cudaGetLastError() == cudaSuccess,
         "last error reported once");
  int v = 0;
  cudaDriverGetVersion(&v);
  expect(v == 13000, "driver version 13000");
  cudaSetDevice(0);
}

void check_memory_and_streams() {
  constexpr size_t kN = 1 << 20;
  std::vector<int> host(kN), back(kN, 0);
  for (size_t i = 0; i < kN; ++i) host[i] = static_cast<int>(i * 7);
  int* dev = nullptr;
  expect(cudaMalloc(&dev, kN * sizeof(int)) == cudaSuccess, "cudaMalloc");
  expect(cudaMemcpy(dev, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess,
         "cudaMemcpy H2D");
  expect(cudaMemcpy(back.data(), dev, kN * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess,
         "cudaMemcpy D2H");
  expect(back == host, "sync memcpy round trip");

  cudaStream_t s;
  expect(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream create");
  int ms = 50;
  cudaLaunchHostFunc(s, sleep_ms_fn, &ms);
  cudaMemsetAsync(dev, 0, kN * sizeof(int), s);
  cudaMemcpyAsync(back.data(), dev, kN * sizeof(int), cudaMemcpyDeviceToHost, s);
  expect(cudaStreamQuery(s) == cudaErrorNotReady, "stream busy while a host func sleeps");
  expect(cudaGetLastError() == cudaSuccess, "cudaErrorNotReady is not recorded as an error");
  expect(cudaStreamSynchronize(s) == cudaSuccess && cudaStreamQuery(s) == cudaSuccess,
         "stream synchronize");
  expect(back[kN - 1] == 0 && back[1] == 0, "async memset then memcpy ran in order");

  Order order;
  std::vector<Step> steps;
  for (int i = 0; i < 20; ++i) steps.push_back({&order, i});
  for (auto& st : steps) cudaLaunchHostFunc(s, record_step, &st);
  cudaStreamSynchronize(s);
  bool in_order = order.seen.size() == 20;
  for (int i = 0; in_order && i < 20; ++i) in_order = order.seen[static_cast<size_t>(i)] == i;
  expect(in_order, "host funcs run in stream order");

  // Legacy default stream: a blocking stream's work finishes before later default-stream work.
  cudaStream_t blocking;
  cudaStreamCreate(&blocking);
  int set_value = 0;
  ms = 40;
  cudaLaunchHostFunc(blocking, sleep_ms_fn, &ms);
  cudaLaunchHostFunc(
      blocking, [](void* p) { *static_cast<int*>(p) = 42; }, &set_value);
  int seen = -1;
  cudaLaunchHostFunc(
      nullptr, [](void* p) { *static_cast<int*>(p) = 1; }, &seen);  // marker on the legacy stream
  cudaMemcpy(&seen, &set_value, sizeof(int), cudaMemcpyHostToHost);
  expect(seen == 42, "legacy default stream waits for prior blocking-stream work");
  cudaStreamDestroy(blocking);

  expect(cudaFree(dev) == cudaSuccess, "cudaFree");
  expect(cudaFree(reinterpret_cast<void*>(0x1234)) == cudaErrorInvalidValue,
         "cudaFree of a bad pointer fails");
  cudaGetLastError();
  cudaStreamDestroy(s);
}

void check_events() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaEvent_t e1, e2, e3, nt;
  cudaEventCreate(&e1);
  cudaEventCreate(&e2);
  cudaEventCreate(&e3);
  cudaEventCreateWithFlags(&nt, cudaEventDisableTiming);
  int ms = 30;
  cudaEventRecord(e1, s);
  cudaLaunchHostFunc(s, sleep_ms_fn, &ms);
  cudaEventRecord(e2, s);
  cudaLaunchHostFunc(s, sleep_ms_fn, &ms);
  cudaEventRecord(e3, s);
  cudaEventRecord(nt, s);
  expect(cudaEventQuery(e3) == cudaErrorNotReady, "event pending while its stream is busy");
  expect(cudaEventSynchronize(e3) == cudaSuccess && cudaEventQuery(e3) == cudaSuccess,
         "event synchronize");
  float t12 = 0, t13 = 0, dummy = 0;
  cudaEventElapsedTime(&t12, e1, e2);
  cudaEventElapsedTime(&t13, e1, e3);
  expect(t12 > 0 && t13 > t12,
         "event times ordered: " + std::to_string(t12) + " < " + std::to_string(t13));
  expect(cudaEventElapsedTime(&dummy, e1, nt) == cudaErrorInvalidResourceHandle,
         "disable-timing event has no time");
  cudaGetLastError();

  // The probe's path: driver-API events recorded on the application's runtime stream.
  CUevent d1, d2;
  expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
  CUcontext ctx = nullptr;
  expect(cuStreamGetCtx(reinterpret_cast<CUstream>(s), &ctx) == CUDA_SUCCESS && ctx != nullptr,
         "cuStreamGetCtx");
  expect(cuEventCreate(&d1, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
             cuEventCreate(&d2, CU_EVENT_DEFAULT) == CUDA_SUCCESS,
         "cuEventCreate");
  cuEventRecord(d1, reinterpret_cast<CUstream>(s));
  cudaLaunchHostFunc(s, sleep_ms_fn, &ms);
  cuEventRecord(d2, reinterpret_cast<CUstream>(s));
  expect(cuEventSynchronize(d2) == CUDA_SUCCESS, "cuEventSynchronize");
  float dt = 0;
  expect(cuEventElapsedTime(&dt, d1, d2) == CUDA_SUCCESS && dt >= ms * 0.9f,
         "driver events time a runtime-stream host func");
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  expect(cuStreamIsCapturing(reinterpret_cast<CUstream>(s), &cs) == CUDA_SUCCESS &&
             cs == CU_STREAM_CAPTURE_STATUS_NONE,
         "not capturing");
  const char* name = nullptr;
  expect(cuGetErrorName(CUDA_ERROR_NOT_READY, &name) == CUDA_SUCCESS &&
             std::strcmp(name, "CUDA_ERROR_NOT_READY") == 0,
         "cuGetErrorName");
  cuEventDestroy(d1);
  cuEventDestroy(d2);
  for (cudaEvent_t e : {e1, e2, e3, nt}) cudaEventDestroy(e);
  cudaStreamDestroy(s);
}

void add_one(void* arg) {
  ++*static_cast<int*>(arg);
}

// Capture records work instead of running it; each launch runs it again.  An unsafe call
// (here an event query) from another thread in global mode invalidates a global capture;
// the same call in thread-local mode does not.
void check_capture() {
  cudaStream_t s, other;
  cudaStreamCreate(&s);
  cudaStreamCreate(&other);
  cudaEvent_t ev;
  cudaEventCreate(&ev);
  cudaEventRecord(ev, other);
  cudaStreamSynchronize(other);
  int count = 0;
  expect(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture");
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  expect(cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusActive,
         "capturing");
  cudaLaunchHostFunc(s, add_one, &count);
  cudaLaunchHostFunc(s, add_one, &count);
  std::thread([&] {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
    cudaThreadExchangeStreamCaptureMode(&mode);
    expect(cudaEventQuery(ev) == cudaSuccess, "a thread-local thread may query during capture");
  }).join();
  cudaGraph_t g = nullptr;
  expect(cudaStreamEndCapture(s, &g) == cudaSuccess && g != nullptr, "end capture");
  expect(count == 0, "captured work does not run");
  cudaGraphExec_t exec = nullptr;
  expect(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess, "instantiate");
  cudaGraphLaunch(exec, s);
  cudaGraphLaunch(exec, s);
  cudaStreamSynchronize(s);
  expect(count == 4, "each launch runs the captured work");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);

  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  cudaLaunchHostFunc(s, add_one, &count);
  std::thread([&] {
    expect(cudaEventQuery(ev) == cudaErrorStreamCaptureUnsupported,
           "a global-mode thread may not query during a global capture");
  }).join();
  expect(cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusInvalidated,
         "...which invalidates the capture");
  g = nullptr;
  expect(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && g == nullptr,
         "an invalidated capture ends with an error");

  cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  expect(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported,
         "waiting for a capturing stream is refused");
  cudaStreamEndCapture(s, &g);
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
  cudaStreamDestroy(other);
}

void check_not_supported() {
  cudaGraph_t g;
  expect(cudaGraphCreate(&g, 0) == cudaErrorNotSupported,
         "unimplemented call returns cudaErrorNotSupported");
  expect(cudaGetLastError() == cudaErrorNotSupported, "...and sets the last error");
  expect(std::string(cudaGetErrorName(cudaErrorNotSupported)) == "cudaErrorNotSupported",
         "cudaGetErrorName");
}

int hostfunc_ms(int ms) {
  cudaStream_t s;
  cudaEvent_t a, b;
  if (cudaStreamCreate(&s) != cudaSuccess || cudaEventCreate(&a) != cudaSuccess ||
      cudaEventCreate(&b) != cudaSuccess)
    return 2;
  cudaEventRecord(a, s);
  cudaLaunchHostFunc(s, sleep_ms_fn, &ms);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float t = 0;
  if (cudaEventElapsedTime(&t, a, b) != cudaSuccess) return 2;
  std::printf("%.3f\n", t);
  return 0;
}

// NVML's utilization.gpu of device 0 (loaded at run time, as the probe does): printed
// once idle, then while a 1 s host function keeps the GPU busy, as "idle=N busy=M".
int utilization() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (lib == nullptr) return 2;
  auto init = reinterpret_cast<decltype(&nvmlInit_v2)>(dlsym(lib, "nvmlInit_v2"));
  auto handle = reinterpret_cast<decltype(&nvmlDeviceGetHandleByIndex_v2)>(
      dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto rates = reinterpret_cast<decltype(&nvmlDeviceGetUtilizationRates)>(
      dlsym(lib, "nvmlDeviceGetUtilizationRates"));
  nvmlDevice_t dev = nullptr;
  if (init == nullptr || handle == nullptr || rates == nullptr || init() != NVML_SUCCESS ||
      handle(0, &dev) != NVML_SUCCESS)
    return 2;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 2;
  int ms = 300;
  cudaLaunchHostFunc(s, sleep_ms_fn, &ms);  // some work before the idle reading
  cudaStreamSynchronize(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  nvmlUtilization_t idle{}, busy{};
  rates(dev, &idle);  // since nvmlInit: about half busy
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  rates(dev, &idle);  // the last 400 ms: idle
  static std::atomic<bool> started{false};
  cudaLaunchHostFunc(
      s,
      [](void*) {
        started = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      },
      nullptr);
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  rates(dev, &busy);  // since the idle reading: the task ran for at least 200 ms of it
  cudaStreamSynchronize(s);
  std::printf("idle=%u busy=%u\n", idle.gpu, busy.gpu);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "hostfunc_ms" && argc > 2) return hostfunc_ms(std::atoi(argv[2]));
  if (mode == "utilization") return utilization();
  if (mode != "basic") {
    std::fprintf(stderr, "usage: sim_cuda_check basic | hostfunc_ms MS | utilization\n");
    return 2;
  }
  check_devices();
  check_memory_and_streams();
  check_events();
  check_capture();
  check_not_supported();
  std::printf("%d failures\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
