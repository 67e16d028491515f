// A per-thread ring of op records.  The owning application thread is the
// only producer and never blocks: when the ring is full the op is not
// recorded and the drop is counted.  Background threads move each slot
// through its states; the writer frees slots in order by advancing the tail.
//
//   producer:  (free) -> kHostPending -> kGroupDeferred / kDevicePending / kComplete
//   completer: kDevicePending -> kComplete          (device events finished)
//   writer:    kComplete -> kWritten, then tail advances over kWritten slots
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ringside/trace_schema.h"

namespace ringside::probe {

enum SlotState : uint32_t {
  kSlotHostPending = 1,    // entered, the NCCL call has not returned
  kSlotGroupDeferred = 2,  // returned inside a group; events wait for ncclGroupEnd
  kSlotDevicePending = 3,  // returned; waiting for the end event on the stream
  kSlotComplete = 4,       // ready to be written
  kSlotWritten = 5,        // in the trace; free once the tail passes it
};

struct CommState;

struct OpSlot {
  // Fields set before the slot is published; t_exit, device times, flags
  // and status change later, under the state protocol above.
  trace::OpRecord rec{};
  std::atomic<uint32_t> state{0};
  std::atomic<uint8_t> watchdog{0};  // set by the watchdog, merged into flags when written
  // Device start of an op still running on the device, once its start event has
  // completed (completer), so that /pending tells a started op from one whose device
  // never reached it.  trace::kUnknownTime until then.
  std::atomic<int64_t> dev_start_seen{trace::kUnknownTime};
  CommState* comm = nullptr;
  // Pooled CUDA events owned by this slot, created on first use in `event_ctx`.
  void* event_start = nullptr;
  void* event_end = nullptr;
  void* event_ctx = nullptr;
  bool timing = false;  // events were recorded (or will be, at group end)
};

class OpRing {
 public:
  explicit OpRing(uint64_t capacity)
      : capacity_(capacity), slots_(std::make_unique<OpSlot[]>(capacity)) {}

  uint64_t capacity() const { return capacity_; }

  // Producer: the next free slot, or nullptr when full (the caller counts a drop).
  OpSlot* reserve() {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_.load(std::memory_order_acquire) >= capacity_) return nullptr;
    return &slots_[h % capacity_];
  }
  // Producer: makes the reserved slot visible (its state must be set first).
  // Returns the slots in use after it.
  uint64_t publish() {
    const uint64_t h = head_.load(std::memory_order_relaxed) + 1;
    head_.store(h, std::memory_order_release);
    return h - tail_.load(std::memory_order_acquire);
  }

  uint64_t head() const { return head_.load(std::memory_order_acquire); }
  uint64_t tail() const { return tail_.load(std::memory_order_acquire); }
  OpSlot& at(uint64_t index) { return slots_[index % capacity_]; }

  // Writer only: frees every leading kWritten slot.
  void release_written() {
    uint64_t t = tail_.load(std::memory_order_relaxed);
    const uint64_t h = head();
    while (t < h && at(t).state.load(std::memory_order_acquire) == kSlotWritten) ++t;
    tail_.store(t, std::memory_order_release);
  }

 private:
  const uint64_t capacity_;
  std::unique_ptr<OpSlot[]> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

// Copies a slot into a trace record, merging the late fields.
inline trace::OpRecord snapshot(const OpSlot& slot, trace::OpStatus status) {
  trace::OpRecord r = slot.rec;
  r.flags = static_cast<uint8_t>(r.flags | slot.watchdog.load(std::memory_order_relaxed));
  r.status = static_cast<uint8_t>(status);
  return r;
}

}  // namespace ringside::probe
