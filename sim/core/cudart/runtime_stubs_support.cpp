// The runtime's version of the generated stubs' helper: like stubs_support.c, and the
// failure also becomes the thread's last error, as any failing runtime call does.
#include <cstdio>

#include "runtime_state.h"

extern "C" __attribute__((visibility("hidden"))) int rsim_unsupported(const char* name,
                                                                      int* warned) {
  if (!__atomic_exchange_n(warned, 1, __ATOMIC_RELAXED))
    std::fprintf(stderr,
                 "ringsim: %s is not supported by the ringside sim; returning "
                 "cudaErrorNotSupported, see docs/sim.md\n",
                 name);
  return ringside::sim::rt::finish(cudaErrorNotSupported);
}
