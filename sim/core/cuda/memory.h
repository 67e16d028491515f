// Host-backed "device" memory: allocations are ordinary host memory, tracked so that
// frees are validated and pointer queries answer like the real driver.
#pragma once

#include <cstddef>

namespace ringside::sim {

enum class MemKind { kDevice, kHostPinned };

struct Allocation {
  char* base = nullptr;
  size_t size = 0;
  int device = 0;
  MemKind kind = MemKind::kDevice;
};

void* allocate(size_t size, int device, MemKind kind);
// false if ptr is not the base of a live allocation of that kind.
bool release(void* ptr, MemKind kind);
// The allocation containing ptr, if any.
bool find_allocation(const void* ptr, Allocation* out);
size_t device_bytes_in_use(int device);

}  // namespace ringside::sim
