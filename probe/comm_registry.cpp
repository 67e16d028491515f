#include "comm_registry.h"

namespace ringside::probe {

namespace {
uint64_t slot_of(const void* handle) {
  auto x = reinterpret_cast<uint64_t>(handle);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}
}  // namespace

uint32_t CommState::next_p2p_seq(int peer, bool recv) {
  const int32_t n = nranks.load(std::memory_order_relaxed);
  if (peer < 0 || n <= 0 || peer >= n) return 0;
  std::atomic<uint32_t>* seqs = p2p_seq.load(std::memory_order_acquire);
  if (seqs == nullptr) {
    // First send/recv on a comm whose size was unknown at creation (non-blocking init).
    auto* fresh = new (std::nothrow) std::atomic<uint32_t>[2 * static_cast<size_t>(n)]();
    if (fresh == nullptr) return 0;
    if (!p2p_seq.compare_exchange_strong(seqs, fresh, std::memory_order_acq_rel)) {
      delete[] fresh;
    } else {
      seqs = fresh;
    }
  }
  return seqs[2 * peer + (recv ? 1 : 0)].fetch_add(1, std::memory_order_relaxed);
}

CommRegistry::CommRegistry() : entries_(std::make_unique<Entry[]>(kCapacity)) {}

CommState* CommRegistry::find(const void* handle) const {
  if (handle == nullptr) return nullptr;
  uint64_t i = slot_of(handle);
  for (uint64_t n = 0; n < kCapacity; ++n, ++i) {
    const Entry& e = entries_[i % kCapacity];
    const void* k = e.key.load(std::memory_order_acquire);
    if (k == handle) return e.value.load(std::memory_order_acquire);
    if (k == nullptr) return nullptr;
  }
  return nullptr;
}

bool CommRegistry::insert(const void* handle, CommState* state) {
  if (handle == nullptr) return false;
  uint64_t i = slot_of(handle);
  for (uint64_t n = 0; n < kCapacity; ++n, ++i) {
    Entry& e = entries_[i % kCapacity];
    const void* k = e.key.load(std::memory_order_acquire);
    if (k == nullptr) {
      if (e.key.compare_exchange_strong(k, handle, std::memory_order_acq_rel)) {
        e.value.store(state, std::memory_order_release);
        return true;
      }
      // Lost the race; `k` now holds the winner's key.
    }
    if (k == handle) {
      e.value.store(state, std::memory_order_release);
      return true;
    }
  }
  return false;
}

}  // namespace ringside::probe
