// An NCCL profiler plugin that asks for the same events as the probe and does
// nothing with them: the baseline of scripts/perf-probe, so that the probe's
// own cost is measured apart from what loading any plugin costs the library
// underneath (on the sim, reporting steps paces transfers after the data moved).
#include "ringside/nccl_profiler_abi.h"

namespace {

using namespace ringside::nccl_profiler;

int g_context;

NcclResult init(void** context, uint64_t, int* mask, const char*, int, int, int, DebugLogger) {
  *context = &g_context;
  *mask = static_cast<int>(kProxyOp | kProxyStep | kP2p | kKernelCh);
  return 0;
}

NcclResult start(void*, void** handle, EventDescrV5*) {
  *handle = &g_context;
  return 0;
}

NcclResult stop(void*) {
  return 0;
}

NcclResult record(void*, int, StateArgs*) {
  return 0;
}

NcclResult finalize(void*) {
  return 0;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ProfilerV5 ncclProfiler_v5 = {"null", init, start, stop, record, finalize};
}
