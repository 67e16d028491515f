// Bounded lock-free multi-producer queue (Vyukov's sequence-number design)
// for events, communicator records and GPU samples.  push() never blocks and
// is async-signal-safe (only lock-free atomics), so a signal handler may use
// it; a full queue refuses the record and the caller counts the drop.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace ringside::probe {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(uint64_t capacity)
      : capacity_(capacity), cells_(std::make_unique<Cell[]>(capacity)) {
    for (uint64_t i = 0; i < capacity; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  bool push(const T& value) {
    uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos % capacity_];
      const uint64_t seq = cell.seq.load(std::memory_order_acquire);
      const int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          cell.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;  // full
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }

  // Single consumer.
  bool pop(T& out) {
    const uint64_t pos = dequeue_;
    Cell& cell = cells_[pos % capacity_];
    if (cell.seq.load(std::memory_order_acquire) != pos + 1) return false;
    out = cell.value;
    cell.seq.store(pos + capacity_, std::memory_order_release);
    ++dequeue_;
    return true;
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Cell {
    std::atomic<uint64_t> seq{0};
    T value{};
  };
  const uint64_t capacity_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<uint64_t> enqueue_{0};
  alignas(64) uint64_t dequeue_ = 0;
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace ringside::probe
