/* Shared by the generated "not supported" stubs: say once per function, on stderr, that the
 * sim does not implement it, and return the library's not-supported code (801 in both the
 * driver's CUresult and the runtime's cudaError_t). Never a silent success. */
#include <stdio.h>

__attribute__((visibility("hidden"))) int rsim_unsupported(const char* name, int* warned) {
  if (!__atomic_exchange_n(warned, 1, __ATOMIC_RELAXED))
    fprintf(stderr,
            "ringsim: %s is not supported by the ringside sim; returning 801 (not supported), see "
            "docs/sim.md\n",
            name);
  return 801;
}
