#include "step_clock.h"

#include <time.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "ringside/trace_meta.h"

namespace ringside::probe {
namespace {

using trace::monotonic_now_ns;

std::atomic<bool> g_tsc{false};
// Written before g_tsc is set, read after.  Counts from a base keep the double
// exact to the nanosecond however long the machine has been up.
double g_ns_per_tick = 0;
uint64_t g_base_ticks = 0;

#if defined(__x86_64__)
bool invariant_tsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;
  return (d & (1u << 8)) != 0;
}

// One (monotonic, counter) pair, the counter read between two clock readings
// that are close together (a preempted try is repeated).
bool sample(int64_t& ns, uint64_t& ticks) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int64_t a = monotonic_now_ns();
    const uint64_t t = __rdtsc();
    const int64_t b = monotonic_now_ns();
    if (b - a <= 2'000) {
      ns = a + (b - a) / 2;
      ticks = t;
      return true;
    }
  }
  return false;
}

// The kernel keeps its clock on the counter only once it found the counter in step
// on every CPU (a VM or a machine that failed that check uses another source).
bool kernel_trusts_tsc() {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  return static_cast<bool>(f >> source) && source == "tsc";
}

void calibrate() {
  if (!invariant_tsc() || !kernel_trusts_tsc()) return;
  int64_t ns0 = 0, ns1 = 0;
  uint64_t t0 = 0, t1 = 0;
  if (!sample(ns0, t0)) return;
  timespec pause{0, 5'000'000};  // 5 ms: the readings' error is then below 1e-4
  nanosleep(&pause, nullptr);
  if (!sample(ns1, t1) || t1 <= t0 || ns1 - ns0 < 1'000'000) return;
  g_ns_per_tick = static_cast<double>(ns1 - ns0) / static_cast<double>(t1 - t0);
  g_base_ticks = t0;
  g_tsc.store(true, std::memory_order_release);
}
#else
void calibrate() {}
#endif

}  // namespace

void init_step_clock() {
  static std::once_flag once;
  std::call_once(once, calibrate);
}

int64_t step_clock_ns() {
#if defined(__x86_64__)
  if (g_tsc.load(std::memory_order_relaxed))
    return static_cast<int64_t>(static_cast<double>(__rdtsc() - g_base_ticks) * g_ns_per_tick);
#endif
  return monotonic_now_ns();
}

int64_t step_clock_ticks() {
#if defined(__x86_64__)
  if (g_tsc.load(std::memory_order_relaxed)) return static_cast<int64_t>(__rdtsc());
#endif
  return monotonic_now_ns();
}

double step_clock_ns_per_tick() {
  return g_tsc.load(std::memory_order_acquire) ? g_ns_per_tick : 1.0;
}

bool step_clock_uses_tsc() {
  return g_tsc.load(std::memory_order_acquire);
}

}  // namespace ringside::probe
