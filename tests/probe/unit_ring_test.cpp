// The per-thread op ring and the event queue: ordering, full-ring drops,
// out-of-order completion and slot reuse.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "bounded_queue.h"
#include "op_ring.h"

namespace ringside::probe {
namespace {

void produce(OpRing& ring, uint64_t seq, uint32_t state = kSlotComplete) {
  OpSlot* s = ring.reserve();
  ASSERT_NE(s, nullptr);
  s->rec.seq = seq;
  s->state.store(state);
  ring.publish();
}

TEST(OpRing, FullRingRefusesUntilTheWriterFreesSlots) {
  OpRing ring(4);
  for (uint64_t i = 0; i < 4; ++i) produce(ring, i);
  EXPECT_EQ(ring.reserve(), nullptr) << "a full ring must refuse, not overwrite";
  ring.at(0).state.store(kSlotWritten);
  ring.release_written();
  EXPECT_EQ(ring.tail(), 1u);
  OpSlot* s = ring.reserve();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s, &ring.at(4)) << "slot 0 is reused for index 4";
}

TEST(OpRing, TailStopsAtTheFirstUnwrittenSlot) {
  OpRing ring(8);
  produce(ring, 0);
  produce(ring, 1, kSlotDevicePending);
  produce(ring, 2);
  ring.at(0).state.store(kSlotWritten);
  ring.at(2).state.store(kSlotWritten);  // completed out of order
  ring.release_written();
  EXPECT_EQ(ring.tail(), 1u) << "an outstanding op keeps its slot";
  ring.at(1).state.store(kSlotWritten);
  ring.release_written();
  EXPECT_EQ(ring.tail(), 3u);
}

TEST(OpRing, SnapshotMergesWatchdogFlagAndStatus) {
  OpRing ring(2);
  produce(ring, 7, kSlotHostPending);
  OpSlot& s = ring.at(0);
  s.rec.flags = trace::kFlagInGroup;
  s.watchdog.store(trace::kFlagWatchdog);
  const trace::OpRecord r = snapshot(s, trace::OpStatus::kHostPending);
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.flags, trace::kFlagInGroup | trace::kFlagWatchdog);
  EXPECT_EQ(r.status, static_cast<uint8_t>(trace::OpStatus::kHostPending));
}

TEST(OpRing, ProducerAndConsumerThreadsLoseNothingButCountedDrops) {
  OpRing ring(64);
  constexpr uint64_t kOps = 200000;
  uint64_t dropped = 0;
  std::vector<uint64_t> seen;
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    for (;;) {
      const bool finished = done.load();
      const uint64_t head = ring.head();
      for (uint64_t i = ring.tail(); i < head; ++i) {
        OpSlot& s = ring.at(i);
        if (s.state.load() == kSlotComplete) {
          seen.push_back(s.rec.seq);
          s.state.store(kSlotWritten);
        }
      }
      ring.release_written();
      if (finished && ring.tail() == ring.head()) break;
    }
  });
  for (uint64_t i = 0; i < kOps; ++i) {
    OpSlot* s = ring.reserve();
    if (s == nullptr) {
      ++dropped;
      continue;
    }
    s->rec.seq = i;
    s->state.store(kSlotComplete, std::memory_order_release);
    ring.publish();
  }
  done = true;
  consumer.join();
  EXPECT_EQ(seen.size() + dropped, kOps);
  for (size_t i = 1; i < seen.size(); ++i) ASSERT_LT(seen[i - 1], seen[i]) << "order kept";
}

TEST(BoundedQueue, FullQueueCountsDropsAndKeepsOrder) {
  BoundedQueue<int> q(4);
  for (int i = 0; i < 6; ++i) q.push(i);
  EXPECT_EQ(q.dropped(), 2u);
  int v = -1;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(q.pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.pop(v));
  EXPECT_TRUE(q.push(9));
  ASSERT_TRUE(q.pop(v));
  EXPECT_EQ(v, 9);
}

TEST(BoundedQueue, ManyProducers) {
  BoundedQueue<uint64_t> q(1 << 16);
  std::vector<std::thread> producers;
  for (uint64_t t = 0; t < 4; ++t) {
    producers.emplace_back([&q, t] {
      for (uint64_t i = 0; i < 10000; ++i) q.push(t * 100000 + i);
    });
  }
  for (auto& p : producers) p.join();
  uint64_t v = 0;
  uint64_t n = 0;
  uint64_t last[4] = {0, 0, 0, 0};
  bool first[4] = {true, true, true, true};
  while (q.pop(v)) {
    const uint64_t t = v / 100000;
    if (!first[t]) {
      EXPECT_GT(v, last[t]) << "per-producer order";
    }
    first[t] = false;
    last[t] = v;
    ++n;
  }
  EXPECT_EQ(n, 40000u);
  EXPECT_EQ(q.dropped(), 0u);
}

}  // namespace
}  // namespace ringside::probe
