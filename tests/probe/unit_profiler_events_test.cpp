// The profiler plugin callbacks, driven in the order NCCL 2.28's network proxy
// calls them: per-peer counters, the step states' buckets, and what is ignored.
#include <gtest/gtest.h>

#include <vector>

#include "link_table.h"
#include "profiler_events.h"

namespace ringside::probe {
namespace {

using namespace nccl_profiler;

int64_t g_now = 0;
int64_t fake_clock() {
  return g_now;
}
constexpr pid_t kSelf = 4242;

struct Harness {
  LinkTable table;
  void* ctx = nullptr;
  int mask = 0;
  Harness() { plugin::init(table, &ctx, 0xabcdef, &mask, 2, 8, 3); }

  void* start_op(int peer, int channel, bool send, pid_t pid = kSelf) {
    ProxyOpDescr d{};
    d.pid = pid;
    d.peer = peer;
    d.channel_id = static_cast<uint8_t>(channel);
    d.is_send = send ? 1 : 0;
    d.n_steps = 4;
    void* h = nullptr;
    plugin::start(ctx, &h, kProxyOp, nullptr, &d, 0, kSelf);
    return h;
  }
  void* start_step(void* op, int step) {
    void* h = nullptr;
    plugin::start(ctx, &h, kProxyStep, op, nullptr, step, kSelf);
    return h;
  }
  void state(void* step, int s, size_t bytes) {
    StateArgs a{};
    a.proxy_step.trans_size = bytes;
    plugin::record(step, s, &a, fake_clock);
  }
  // A send step: 10 ns GPU, 20 ns peer credit, `net` ns in the network.
  void send_step(void* op, int step, size_t bytes, int64_t net) {
    void* s = start_step(op, step);
    state(s, kStepSendGpuWait, 999);  // stale size: must not count
    g_now += 10;
    state(s, kStepSendPeerWait, 999);
    g_now += 20;
    state(s, kStepSendWait, bytes);
    g_now += net;
    plugin::stop(s, fake_clock);
  }
  std::vector<trace::LinkRecord> drain() {
    std::vector<trace::LinkRecord> rows;
    table.drain(77, rows);
    return rows;
  }
};

TEST(ProfilerEvents, InitAsksForProxyEventsOnly) {
  Harness h;
  EXPECT_EQ(h.mask, kProxyOp | kProxyStep);
  EXPECT_NE(h.ctx, nullptr);
}

TEST(ProfilerEvents, SendStepsAddUpPerPeerAndChannel) {
  Harness h;
  void* op = h.start_op(4, 1, true);
  ASSERT_NE(op, nullptr);
  for (int i = 0; i < 3; ++i) h.send_step(op, i, 1024, 100);
  plugin::stop(op, fake_clock);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 1u);
  const trace::LinkRecord& r = rows[0];
  EXPECT_EQ(r.t_ns, 77);
  EXPECT_EQ(r.comm_hash, 0xabcdefu);
  EXPECT_EQ(r.nranks, 8);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.n_nodes, 2);
  EXPECT_EQ(r.peer, 4);
  EXPECT_EQ(r.channel, 1);
  EXPECT_EQ(r.is_send, 1);
  EXPECT_EQ(r.ops, 1u);
  EXPECT_EQ(r.steps, 3u);
  EXPECT_EQ(r.bytes, 3u * 1024);
  EXPECT_EQ(r.net_ns, 300);
  EXPECT_EQ(r.peer_wait_ns, 60);
  EXPECT_EQ(r.gpu_wait_ns, 30);
  EXPECT_EQ(r.active_ns, 390);
  EXPECT_TRUE(h.drain().empty()) << "a window is written once";
}

TEST(ProfilerEvents, ReceiveStepsTimeTheWaitForDataAndTheGpu) {
  Harness h;
  void* op = h.start_op(2, 0, false);
  void* s = h.start_step(op, 0);
  h.state(s, kStepRecvWait, 5);  // stale size
  g_now += 50;
  h.state(s, kStepRecvFlushWait, 4096);
  g_now += 5;
  h.state(s, kStepRecvGpuWait, 4096);
  g_now += 7;
  plugin::stop(s, fake_clock);
  plugin::stop(op, fake_clock);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].is_send, 0);
  EXPECT_EQ(rows[0].bytes, 4096u);
  EXPECT_EQ(rows[0].net_ns, 50);
  EXPECT_EQ(rows[0].gpu_wait_ns, 12);
}

TEST(ProfilerEvents, AReceiveStepStartedAgainCountsOnce) {
  // NCCL starts a receive step again when irecv could not be posted, without a stop.
  Harness h;
  void* op = h.start_op(2, 0, false);
  h.start_step(op, 0);
  g_now += 1000;
  void* s = h.start_step(op, 0);
  h.state(s, kStepRecvWait, 0);
  g_now += 10;
  h.state(s, kStepRecvFlushWait, 64);
  plugin::stop(s, fake_clock);
  plugin::stop(op, fake_clock);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].steps, 1u);
  EXPECT_EQ(rows[0].active_ns, 10);
}

TEST(ProfilerEvents, WhatCannotBePlacedGetsNoHandle) {
  Harness h;
  // A proxy op of another process (PXN): its context pointer is not ours.
  EXPECT_EQ(h.start_op(1, 0, true, kSelf + 1), nullptr);
  // A step whose op got no handle; ancestors NCCL starts along (Coll, GroupApi).
  EXPECT_EQ(h.start_step(nullptr, 0), nullptr);
  void* coll = &h;
  plugin::start(h.ctx, &coll, kColl, nullptr, nullptr, 0, kSelf);
  EXPECT_EQ(coll, nullptr);
  // Null handles come back from NCCL and are ignored.
  plugin::record(nullptr, kStepSendWait, nullptr, fake_clock);
  plugin::stop(nullptr, fake_clock);
  // No context (tracing off): nothing.
  void* op = &h;
  ProxyOpDescr d{};
  d.pid = kSelf;
  plugin::start(nullptr, &op, kProxyOp, nullptr, &d, 0, kSelf);
  EXPECT_EQ(op, nullptr);
  EXPECT_TRUE(h.drain().empty());
}

TEST(ProfilerEvents, AStepsTimeStartsAtItsFirstState) {
  // NCCL records a step's first state right after starting it; the probe reads
  // no clock at the start, so a gap before the first state is not counted.
  Harness h;
  void* op = h.start_op(4, 0, true);
  void* s = h.start_step(op, 0);
  g_now += 1000;
  h.state(s, kStepSendWait, 4096);
  g_now += 40;
  plugin::stop(s, fake_clock);
  void* bare = h.start_step(op, 1);  // stopped before any state: a step without time
  g_now += 500;
  plugin::stop(bare, fake_clock);
  plugin::stop(op, fake_clock);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].steps, 2u);
  EXPECT_EQ(rows[0].active_ns, 40);
  EXPECT_EQ(rows[0].net_ns, 40);
}

TEST(ProfilerEvents, OpsOfOneLinkInOneWindowMakeOneRow) {
  Harness h;
  for (int k = 0; k < 4; ++k) {
    void* op = h.start_op(4, 0, true);
    h.send_step(op, 0, 100, 5);
    plugin::stop(op, fake_clock);
  }
  void* other = h.start_op(4, 1, true);  // another channel: another row
  h.send_step(other, 0, 100, 5);
  plugin::stop(other, fake_clock);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].ops, 4u);
  EXPECT_EQ(rows[0].bytes, 400u);
  EXPECT_EQ(rows[1].channel, 1);
}

}  // namespace
}  // namespace ringside::probe
