// What the probe's NCCL profiler plugin costs NCCL's network proxy per transfer
// step: the library named on the command line is opened as NCCL opens a plugin,
// one communicator is announced, and batches of proxy steps (start, the states
// a send step records, stop) run on proxy ops of 8 steps, as the proxy thread
// would call them.  Prints the median ns per step.  Used by scripts/perf-probe.
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ringside/nccl_profiler_abi.h"

namespace {

using namespace ringside::nccl_profiler;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: perf_plugin_steps PLUGIN.so [batches] [ops per batch]\n");
    return 2;
  }
  const int batches = argc > 2 ? std::atoi(argv[2]) : 200;
  const int ops = argc > 3 ? std::atoi(argv[3]) : 250;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "perf_plugin_steps: %s\n", dlerror());
    return 1;
  }
  auto* p = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  if (p == nullptr) {
    std::fprintf(stderr, "perf_plugin_steps: no ncclProfiler_v5 in %s\n", argv[1]);
    return 1;
  }
  void* ctx = nullptr;
  int mask = 0;
  if (p->init(&ctx, 0x1234, &mask, "perf", 2, 8, 3, nullptr) != 0 || ctx == nullptr) {
    std::fprintf(stderr, "perf_plugin_steps: the plugin's init gave no context (is tracing on?)\n");
    return 1;
  }
  const pid_t self =
      getpid();  // NCCL fills in a pid it knows; a syscall per op is not the plugin's
  std::vector<double> per_step;
  StateArgs args{};
  args.proxy_step.trans_size = 512 << 10;
  for (int b = 0; b < batches; ++b) {
    const int64_t t0 = now_ns();
    for (int o = 0; o < ops; ++o) {
      EventDescrV5 d{};
      d.type = kProxyOp;
      d.rank = 3;
      d.proxy_op.pid = self;
      d.proxy_op.channel_id = static_cast<uint8_t>(o % 4);
      d.proxy_op.peer = 4;
      d.proxy_op.n_steps = 8;
      d.proxy_op.is_send = 1;
      void* op = nullptr;
      p->start_event(ctx, &op, &d);
      for (int s = 0; s < 8; ++s) {
        EventDescrV5 sd{};
        sd.type = kProxyStep;
        sd.parent = op;
        sd.proxy_step.step = s;
        void* step = nullptr;
        p->start_event(ctx, &step, &sd);
        p->record_event_state(step, kStepSendGpuWait, &args);
        p->record_event_state(step, kStepSendPeerWait, &args);
        p->record_event_state(step, kStepSendWait, &args);
        p->stop_event(step);
      }
      p->stop_event(op);
    }
    per_step.push_back(static_cast<double>(now_ns() - t0) / (ops * 8.0));
  }
  std::sort(per_step.begin(), per_step.end());
  std::printf("median_ns_per_step %.1f\n", per_step[per_step.size() / 2]);
  std::printf("min_ns_per_step %.1f\n", per_step.front());
  return 0;
}
