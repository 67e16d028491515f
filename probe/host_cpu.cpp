#include "host_cpu.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace ringside::probe {

namespace {

// Thread ids of the probe's running threads (a handful; 0 = free slot).
constexpr int kOwnSlots = 16;
std::atomic<int64_t> g_own_tids[kOwnSlots];
// CPU time of the probe threads that have ended.
std::atomic<int64_t> g_ended_cpu_ns{0};

int64_t this_tid() {
  return static_cast<int64_t>(syscall(SYS_gettid));
}

bool is_own(int64_t tid) {
  for (const auto& slot : g_own_tids)
    if (slot.load(std::memory_order_relaxed) == tid) return true;
  return false;
}

}  // namespace

void own_thread_started() {
  const int64_t tid = this_tid();
  for (auto& slot : g_own_tids) {
    int64_t free = 0;
    if (slot.compare_exchange_strong(free, tid, std::memory_order_relaxed)) return;
  }
  // More threads than slots: this one goes uncounted (the figure is a lower bound).
}

void own_thread_ending() {
  const int64_t tid = this_tid();
  timespec ts{};
  const bool known = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0;
  for (auto& slot : g_own_tids) {
    int64_t mine = tid;
    if (slot.compare_exchange_strong(mine, 0, std::memory_order_relaxed)) break;
  }
  if (known)
    g_ended_cpu_ns.fetch_add(ts.tv_sec * 1'000'000'000ll + ts.tv_nsec, std::memory_order_relaxed);
}

HostCpu process_host_cpu() {
  HostCpu cpu;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return cpu;
  int64_t own = 0;
  bool any = false;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300];
    std::snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread ended meanwhile, or no schedstat
    char buf[96];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    char* end = nullptr;
    const long long on_cpu = std::strtoll(buf, &end, 10);
    if (end == buf) continue;
    any = true;
    const long long waited = std::strtoll(end, nullptr, 10);
    if (waited > 0) cpu.run_delay_ns += waited;
    if (on_cpu > 0 && is_own(std::strtoll(e->d_name, nullptr, 10))) own += on_cpu;
  }
  closedir(tasks);
  if (any) cpu.probe_cpu_ns = own + g_ended_cpu_ns.load(std::memory_order_relaxed);
  return cpu;
}

}  // namespace ringside::probe
