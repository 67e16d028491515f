#include "ringside/trace_meta.h"

#include <ctime>

namespace ringside::trace {
namespace {
int64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t monotonic_now_ns() {
  return now_ns(CLOCK_MONOTONIC);
}

void stamp_clock_reference(TraceMeta& meta) {
  // Read the two clocks back to back so the pair maps one timeline onto the other.
  meta.clock_realtime_ns = now_ns(CLOCK_REALTIME);
  meta.clock_monotonic_ns = now_ns(CLOCK_MONOTONIC);
}

}  // namespace ringside::trace
