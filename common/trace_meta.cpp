#include "ringside/trace_meta.h"

#include <cstdint>
#include <ctime>

namespace ringside::trace {

void stamp_clock_reference(TraceMeta& meta) {
  // The pair maps one timeline onto the other, so both must be read at one instant:
  // the realtime reading is bracketed by two monotonic ones, and the narrowest of a
  // few tries is kept (a thread preempted between two readings, milliseconds on a
  // busy host, would shift every time in the file).
  int64_t best = INT64_MAX;
  for (int attempt = 0; attempt < 16 && best > 2'000; ++attempt) {
    const int64_t m0 = monotonic_now_ns();
    const int64_t real = clock_now_ns(CLOCK_REALTIME);
    const int64_t m1 = monotonic_now_ns();
    if (m1 - m0 < best) {
      best = m1 - m0;
      meta.clock_realtime_ns = real;
      meta.clock_monotonic_ns = m0 + (m1 - m0) / 2;
    }
  }
}

}  // namespace ringside::trace
