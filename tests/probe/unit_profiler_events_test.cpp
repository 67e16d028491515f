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

TEST(ProfilerEvents, InitAsksForProxyAndSendRecvKernelEventsOnly) {
  Harness h;
  EXPECT_EQ(h.mask, kProxyOp | kProxyStep | kP2p | kKernelCh);
  EXPECT_NE(h.ctx, nullptr);
}

// A send/recv task and its kernel channels, as NCCL reports them: the P2p event
// on the enqueuing thread, then per channel a KernelCh with GPU timer readings.
void* start_task(Harness& h, const char* func, int peer, size_t count, uint8_t channels,
                 const char* type = "ncclFloat32") {
  void* t = nullptr;
  plugin::start_task(h.ctx, &t, func, type, count, peer, channels);
  return t;
}
void kernel_channel(void* task, uint8_t channel, uint64_t start, uint64_t stop) {
  void* k = nullptr;
  plugin::start_kernel(&k, task, channel, start);
  StateArgs a{};
  a.kernel_ch.p_timer = stop;
  plugin::record(k, kKernelChStop, &a, fake_clock);
  plugin::stop(k, fake_clock);
}

TEST(ProfilerEvents, SendRecvKernelChannelsTimeEveryPeerByTheGpuTimer) {
  Harness h;
  // Rank 3 sends 1 MiB (256 Ki floats) to rank 4 over two channels, twice.
  for (int rep = 0; rep < 2; ++rep) {
    void* t = start_task(h, "Send", 4, 256 << 10, 2);
    ASSERT_NE(t, nullptr);
    kernel_channel(t, 0, 1000, 1000 + 200'000);
    kernel_channel(t, 1, 1000, 1000 + 100'000 * (rep + 1));
    plugin::stop(t, fake_clock);
  }
  void* r = start_task(h, "Recv", 2, 1 << 20, 1, "ncclInt8");
  kernel_channel(r, 0, 50, 50 + 400'000);
  plugin::stop(r, fake_clock);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.source, 1);
    EXPECT_EQ(row.steps, 0u);
    EXPECT_EQ(row.peer_wait_ns, 0);
  }
  // Sorted by (peer, channel, source, direction).
  EXPECT_EQ(rows[0].peer, 2);
  EXPECT_EQ(rows[0].is_send, 0);
  EXPECT_EQ(rows[0].bytes, 1u << 20);
  EXPECT_EQ(rows[0].net_ns, 400'000);
  EXPECT_EQ(rows[1].peer, 4);
  EXPECT_EQ(rows[1].channel, 0);
  EXPECT_EQ(rows[1].ops, 2u);
  EXPECT_EQ(rows[1].bytes, 1u << 20);  // half of 1 MiB per channel, twice
  EXPECT_EQ(rows[1].net_ns, 400'000);
  EXPECT_EQ(rows[2].channel, 1);
  EXPECT_EQ(rows[2].net_ns, 300'000);
  // The fastest channel: 512 KiB in 100 us.
  EXPECT_EQ(rows[2].best_step_bytes, 512u << 10);
  EXPECT_EQ(rows[2].best_step_ns, 100'000);
}

TEST(ProfilerEvents, KernelChannelsWithoutASendRecvTaskOrAReadingAreIgnored) {
  Harness h;
  // A collective's channel: its parent is no task of ours (null, as NCCL passes it).
  kernel_channel(nullptr, 0, 10, 20);
  // A copy to itself (alltoall's own block), a peer outside the communicator.
  EXPECT_EQ(start_task(h, "Send", 3, 1024, 1), nullptr);
  EXPECT_EQ(start_task(h, "Recv", 8, 1024, 1), nullptr);
  EXPECT_EQ(start_task(h, "Recv", -1, 1024, 1), nullptr);
  EXPECT_EQ(start_task(h, "AllReduce", 1, 1024, 1), nullptr);
  // A timer that did not run forward, or ran an hour: no measurement.
  void* t = start_task(h, "Send", 1, 1024, 1);
  kernel_channel(t, 0, 500, 500);
  kernel_channel(t, 0, 500, 400);
  kernel_channel(t, 0, 0, 3'700'000'000'000ull);
  void* k = nullptr;
  plugin::start_kernel(&k, t, 0, 100);  // stopped without its stop state
  plugin::stop(k, fake_clock);
  plugin::stop(t, fake_clock);
  EXPECT_TRUE(h.drain().empty());
}

TEST(ProfilerEvents, DatatypeSizesFromNcclNames) {
  EXPECT_EQ(plugin::datatype_bytes("ncclInt8"), 1u);
  EXPECT_EQ(plugin::datatype_bytes("ncclUint32"), 4u);
  EXPECT_EQ(plugin::datatype_bytes("ncclFloat16"), 2u);
  EXPECT_EQ(plugin::datatype_bytes("ncclBfloat16"), 2u);
  EXPECT_EQ(plugin::datatype_bytes("ncclFloat64"), 8u);
  EXPECT_EQ(plugin::datatype_bytes("ncclFloat8e4m3"), 1u);
  EXPECT_EQ(plugin::datatype_bytes("Unknown"), 0u);
  EXPECT_EQ(plugin::datatype_bytes(nullptr), 0u);
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

// The clock counts ticks; an op's times become nanoseconds once, when it stops.
TEST(ProfilerEvents, StepTicksAreScaledToNanosecondsWhenTheOpStops) {
  Harness h;
  void* op = h.start_op(4, 0, true);
  h.send_step(op, 0, 128 << 10, 1000);
  h.send_step(op, 1, 128 << 10, 4000);
  plugin::stop(op, fake_clock, 0.25);
  const auto rows = h.drain();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].net_ns, 1250);
  EXPECT_EQ(rows[0].peer_wait_ns, 10);
  EXPECT_EQ(rows[0].gpu_wait_ns, 5);
  EXPECT_EQ(rows[0].active_ns, 1265);
  EXPECT_EQ(rows[0].best_step_bytes, 128u << 10);
  EXPECT_EQ(rows[0].best_step_ns, 250) << "the faster step, in ns";
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
