#include "device_busy.h"

#include <chrono>
#include <mutex>
#include <unordered_map>

namespace ringside::sim {
namespace {

struct Busy {
  int active = 0;  // tasks running now
  std::chrono::steady_clock::time_point since;
  uint64_t ns = 0;  // closed busy spans
};

std::mutex& busy_mutex() {
  static auto* m = new std::mutex;  // leaked: workers may outlive static destruction
  return *m;
}
std::unordered_map<int, Busy>& busy_table() {
  static auto* t = new std::unordered_map<int, Busy>;
  return *t;
}

}  // namespace

void device_busy_begin(int device) {
  std::lock_guard<std::mutex> lk(busy_mutex());
  Busy& b = busy_table()[device];
  if (b.active++ == 0) b.since = std::chrono::steady_clock::now();
}

void device_busy_end(int device) {
  std::lock_guard<std::mutex> lk(busy_mutex());
  Busy& b = busy_table()[device];
  if (b.active == 0) return;
  if (--b.active == 0) {
    b.ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - b.since)
                                      .count());
  }
}

uint64_t device_busy_ns(int device) {
  std::lock_guard<std::mutex> lk(busy_mutex());
  auto it = busy_table().find(device);
  if (it == busy_table().end()) return 0;
  const Busy& b = it->second;
  uint64_t ns = b.ns;
  if (b.active > 0) {
    ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - b.since)
                                    .count());
  }
  return ns;
}

}  // namespace ringside::sim
