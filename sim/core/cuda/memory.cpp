// Allocation registry.
#include "memory.h"

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>

#include "sim_internal.h"

namespace ringside::sim {

namespace {
std::mutex g_mu;
std::map<const char*, Allocation>& allocs() {
  static auto* m = new std::map<const char*, Allocation>();  // leaked: used until exit
  return *m;
}
constexpr size_t kAlign = 256;  // cudaMalloc's alignment guarantee
}  // namespace

void* allocate(size_t size, int device, MemKind kind) {
  size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0) rounded = kAlign;
  char* p = static_cast<char*>(std::aligned_alloc(kAlign, rounded));
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lk(g_mu);
  allocs()[p] = Allocation{p, size, device, kind};
  return p;
}

bool release(void* ptr, MemKind kind) {
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = allocs().find(static_cast<const char*>(ptr));
  if (it == allocs().end() || it->second.kind != kind) return false;
  std::free(it->second.base);
  allocs().erase(it);
  return true;
}

bool find_allocation(const void* ptr, Allocation* out) {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = allocs().upper_bound(p);
  if (it == allocs().begin()) return false;
  --it;
  if (p >= it->second.base + std::max<size_t>(it->second.size, 1)) return false;
  *out = it->second;
  return true;
}

size_t device_bytes_in_use(int device) {
  std::lock_guard<std::mutex> lk(g_mu);
  size_t total = 0;
  for (auto& [p, a] : allocs())
    if (a.kind == MemKind::kDevice && a.device == device) total += a.size;
  return total;
}

}  // namespace ringside::sim

extern "C" int ringsim_is_device_pointer(const void* ptr) {
  ringside::sim::Allocation a;
  return ringside::sim::find_allocation(ptr, &a) && a.kind == ringside::sim::MemKind::kDevice ? 1
                                                                                              : 0;
}
