#include "proxy_events.h"

#include <algorithm>
#include <thread>

#include "datatypes.h"
#include "profiler.h"

namespace ringside::sim::nccl {
namespace {

using namespace nccl_profiler;

// NCCL's Simple protocol moves a channel's data in steps of its buffer / 8.
constexpr uint64_t kStepBytes = 512 << 10;
constexpr int kMaxSteps = 8;
// Ops up to this size use one channel, larger ones two (NCCL: fewer channels for small ops).
constexpr uint64_t kOneChannelBytes = 64 << 10;

void sleep_until_ns(int64_t t) {
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t)));
}

int64_t clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Time `bytes` take on the link from this rank to `peer`: latency + bytes / bandwidth
// (slow_nic and slow_pair applied).
double link_seconds(const Comm& comm, int peer, uint64_t bytes) {
  const Link l = cluster().link(comm.endpoint(comm.rank), comm.endpoint(peer));
  return l.latency_us * 1e-6 + static_cast<double>(bytes) / (l.bandwidth_gbps * 1e9);
}

uint64_t step_bytes(uint64_t bytes, int n_steps, int k) {
  const uint64_t per = bytes / static_cast<uint64_t>(n_steps);
  return k + 1 < n_steps ? per : bytes - per * static_cast<uint64_t>(n_steps - 1);
}

}  // namespace

std::vector<ProxyEvents::PeerTask> ProxyEvents::peer_tasks(const Comm& comm, const OpDesc& op) {
  std::vector<PeerTask> out;
  const int n = comm.nranks;
  const int r = comm.rank;
  auto add = [&](int peer, bool is_send) {
    if (peer >= 0 && peer < n && peer != r) out.push_back({peer, is_send});
  };
  switch (op.func) {
    case Func::kSend:
      add(op.root, true);
      break;
    case Func::kRecv:
      add(op.root, false);
      break;
    case Func::kAlltoAll:  // each rank starts with its next peer, as NCCL's p2p schedule
      for (int k = 1; k < n; ++k) add((r + k) % n, true);
      for (int k = 1; k < n; ++k) add((r + n - k) % n, false);
      break;
    case Func::kGather:
      if (r != op.root) add(op.root, true);
      for (int p = 0; r == op.root && p < n; ++p) add(p, false);
      break;
    case Func::kScatter:
      if (r != op.root) add(op.root, false);
      for (int p = 0; r == op.root && p < n; ++p) add(p, true);
      break;
    default:
      break;
  }
  return out;
}

void* ProxyEvents::parent_of(const Transfer& t) const {
  for (const Task& k : tasks_) {
    if (k.op == static_cast<size_t>(t.op) && k.peer == t.peer && k.is_send == t.is_send)
      return k.handle;
  }
  return op_events_[static_cast<size_t>(t.op)];
}

std::vector<ProxyEvents::Transfer> ProxyEvents::transfers(const Comm& comm, const OpDesc& op,
                                                          int op_index) {
  std::vector<Transfer> out;
  const int n = comm.nranks;
  const int r = comm.rank;
  if (n < 2 || op.func == Func::kControl) return out;
  const uint64_t es = op.type_size();
  const uint64_t elems = op.count * es;
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  auto add = [&](int peer, bool is_send, uint64_t bytes, bool coupled) {
    if (peer < 0 || peer >= n || peer == r || bytes == 0) return;
    if (comm.node_names[static_cast<size_t>(peer)] == comm.node_names[static_cast<size_t>(r)])
      return;  // intra-node: P2P/SHM transports, no proxy ops
    Transfer t;
    t.peer = peer;
    t.is_send = is_send;
    t.bytes = bytes;
    t.link_s = link_seconds(comm, peer, bytes);
    t.coupled = coupled;
    t.op = op_index;
    out.push_back(t);
  };
  switch (op.func) {
    case Func::kAllReduce: {
      const uint64_t b = 2 * (static_cast<uint64_t>(n) - 1) * elems / static_cast<uint64_t>(n);
      add(next, true, b, true);
      add(prev, false, b, true);
      break;
    }
    case Func::kAllGather:
    case Func::kReduceScatter: {
      const uint64_t b = (static_cast<uint64_t>(n) - 1) * elems;
      add(next, true, b, true);
      add(prev, false, b, true);
      break;
    }
    case Func::kBroadcast:  // a chain from the root along the ring
      if (next != op.root) add(next, true, elems, true);
      if (r != op.root) add(prev, false, elems, true);
      break;
    case Func::kReduce:  // a chain along the ring that ends at the root
      if (r != op.root) add(next, true, elems, true);
      if (prev != op.root) add(prev, false, elems, true);
      break;
    default:  // send/recv, and the collectives NCCL runs as send/recv tasks
      for (const PeerTask& t : peer_tasks(comm, op)) add(t.peer, t.is_send, elems, false);
      break;
  }
  return out;
}

ProxyEvents::ProxyEvents(Comm& comm, const std::vector<const OpDesc*>& ops) : comm_(comm) {
  if (!comm.profiler_live.load(std::memory_order_acquire)) return;
  if (!profiler::wants(kGroup | kColl | kP2p | kProxyOp | kProxyStep | kKernelCh)) return;
  active_ = true;
  EventDescrV5 g{};
  g.type = kGroup;
  g.rank = comm.rank;
  group_ = profiler::start(comm, g);
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = *ops[i];
    void* h = nullptr;
    const std::vector<PeerTask> parts = peer_tasks(comm, op);
    if (parts.empty() && profiler::wants(kColl | kProxyOp | kProxyStep | kKernelCh)) {
      EventDescrV5 d{};
      d.type = kColl;
      d.parent = group_;
      d.rank = comm.rank;
      d.coll.seq_number = op.seq;
      d.coll.func = func_name(op.func);
      d.coll.send_buff = op.sendbuff;
      d.coll.recv_buff = op.recvbuff;
      d.coll.count = op.count;
      d.coll.root = op.root;
      d.coll.datatype = nccl_datatype_string(op.dtype);
      d.coll.n_channels = 2;
      d.coll.algo = "RING";
      d.coll.proto = "SIMPLE";
      d.coll.parent_group = group_;
      h = profiler::start(comm, d);
      if (profiler::wants(kKernelCh) && op.func != Func::kControl) {
        for (uint8_t c = 0; c < 2; ++c) kernels_.push_back({h, c, -1, nullptr});
      }
    }
    op_events_.push_back(h);
    // Send/recv, and the collectives NCCL lowers to them: one P2p task per peer
    // and direction, each with its own kernel channel.
    for (const PeerTask& t : parts) {
      void* th = nullptr;
      if (profiler::wants(kP2p | kProxyOp | kProxyStep | kKernelCh)) {
        EventDescrV5 d{};
        d.type = kP2p;
        d.parent = group_;
        d.rank = comm.rank;
        d.p2p.func = t.is_send ? "Send" : "Recv";
        d.p2p.buff = t.is_send ? const_cast<void*>(op.sendbuff) : op.recvbuff;
        d.p2p.datatype = nccl_datatype_string(op.dtype);
        d.p2p.count = op.count;
        d.p2p.peer = t.peer;
        d.p2p.n_channels = 1;
        d.p2p.parent_group = group_;
        th = profiler::start(comm, d);
      }
      tasks_.push_back({i, t.peer, t.is_send, th});
      if (profiler::wants(kKernelCh)) {
        kernels_.push_back({th, 0, link_seconds(comm, t.peer, op.count * op.type_size()), nullptr});
      }
    }
    for (const Transfer& t : transfers(comm, op, static_cast<int>(i))) transfers_.push_back(t);
  }
  if (!profiler::wants(kProxyOp | kProxyStep)) return;
  for (size_t ti = 0; ti < transfers_.size(); ++ti) {
    const Transfer& t = transfers_[ti];
    const int n_channels = t.bytes <= kOneChannelBytes ? 1 : 2;
    for (int c = 0; c < n_channels; ++c) {
      ChannelOp ch;
      ch.transfer = ti;
      ch.channel = static_cast<uint8_t>(c);
      ch.bytes = t.bytes / static_cast<uint64_t>(n_channels) +
                 (c == 0 ? t.bytes % static_cast<uint64_t>(n_channels) : 0);
      ch.n_steps = static_cast<int>(
          std::clamp<uint64_t>((ch.bytes + kStepBytes - 1) / kStepBytes, 1, kMaxSteps));
      EventDescrV5 d{};
      d.type = kProxyOp;
      d.parent = parent_of(t);
      d.rank = comm.rank;
      d.proxy_op.pid = getpid();
      d.proxy_op.channel_id = ch.channel;
      d.proxy_op.peer = t.peer;
      d.proxy_op.n_steps = ch.n_steps;
      d.proxy_op.chunk_size = static_cast<int>(std::min(ch.bytes, kStepBytes));
      d.proxy_op.is_send = t.is_send ? 1 : 0;
      ch.handle = profiler::start(comm, d);
      profiler::record(comm, ch.handle, kOpInProgress, 0);
      channels_.push_back(ch);
    }
  }
  for (ChannelOp& c : channels_) start_step(c, 0);
}

void ProxyEvents::start_step(ChannelOp& c, int k) {
  if (!profiler::wants(kProxyStep) || c.handle == nullptr) return;
  EventDescrV5 d{};
  d.type = kProxyStep;
  d.parent = c.handle;
  d.rank = comm_.rank;
  d.proxy_step.step = k;
  c.step = profiler::start(comm_, d);
  if (transfers_[c.transfer].is_send) {
    profiler::record(comm_, c.step, kStepSendGpuWait, 0);
    profiler::record(comm_, c.step, kStepSendPeerWait, 0);
  } else {
    profiler::record(comm_, c.step, kStepRecvWait, 0);
  }
}

void ProxyEvents::end_step(ChannelOp& c, int k) {
  if (c.step == nullptr) return;
  const uint64_t b = step_bytes(c.bytes, c.n_steps, k);
  if (!transfers_[c.transfer].is_send) {
    profiler::record(comm_, c.step, kStepRecvFlushWait, b);
    profiler::record(comm_, c.step, kStepRecvGpuWait, b);
  }
  profiler::stop(comm_, c.step);
  c.step = nullptr;
}

void ProxyEvents::pace(int64_t ready_ns, int64_t duration_ns) {
  if (!active_ || (channels_.empty() && kernels_.empty())) {
    close_all();
    sleep_until_ns(ready_ns + duration_ns);
    return;
  }
  const int64_t t0 = std::max(ready_ns, clock_ns());
  // Every step boundary of every channel, in time order.
  struct Mark {
    int64_t t;
    size_t channel;
    int step;
    // 0: the send is posted (SendWait), 1: the step ends, 2: the next one starts,
    // 3: a kernel channel ends (`channel` indexes kernels_)
    int what;
  };
  std::vector<Mark> marks;
  // The kernel starts with the data movement; the GPU timer is the model's time.
  for (size_t i = 0; i < kernels_.size(); ++i) {
    KernelChannel& k = kernels_[i];
    EventDescrV5 d{};
    d.type = kKernelCh;
    d.parent = k.parent;
    d.rank = comm_.rank;
    d.kernel_ch.channel_id = k.channel;
    d.kernel_ch.p_timer = static_cast<uint64_t>(t0);
    k.handle = profiler::start(comm_, d);
    const double len = k.link_s < 0 ? static_cast<double>(duration_ns)
                                    : std::min<double>(k.link_s * 1e9, duration_ns);
    marks.push_back({t0 + static_cast<int64_t>(len), i, 0, 3});
  }
  // Each step's time in the network: its share of its link's time.
  std::vector<int64_t> net_ns(channels_.size(), 0);
  for (size_t i = 0; i < channels_.size(); ++i) {
    const ChannelOp& c = channels_[i];
    const Transfer& t = transfers_[c.transfer];
    const double link_ns = t.link_s * 1e9;
    const double window =
        t.coupled ? static_cast<double>(duration_ns) : std::min<double>(link_ns, duration_ns);
    const double slot = window / c.n_steps;
    net_ns[i] = static_cast<int64_t>(std::min(slot, link_ns / c.n_steps));
    for (int k = 0; k < c.n_steps; ++k) {
      const auto end = t0 + static_cast<int64_t>(slot * (k + 1));
      if (t.is_send) marks.push_back({end - net_ns[i], i, k, 0});
      marks.push_back({end, i, k, 1});
      if (k + 1 < c.n_steps) marks.push_back({end, i, k + 1, 2});
    }
  }
  std::stable_sort(marks.begin(), marks.end(),
                   [](const Mark& a, const Mark& b) { return a.t < b.t; });
  // A send posted late (the thread woke late) still transmits for its whole
  // time: a transfer never takes less than its link allows.
  std::vector<int64_t> posted(channels_.size(), 0);
  for (const Mark& m : marks) {
    if (m.what == 3) {
      KernelChannel& k = kernels_[m.channel];
      sleep_until_ns(m.t);
      profiler::record_kernel_stop(comm_, k.handle, static_cast<uint64_t>(m.t));
      profiler::stop(comm_, k.handle);
      k.handle = nullptr;
      continue;
    }
    ChannelOp& c = channels_[m.channel];
    const bool send = transfers_[c.transfer].is_send;
    sleep_until_ns(m.what == 1 && send ? std::max(m.t, posted[m.channel] + net_ns[m.channel])
                                       : m.t);
    if (m.what == 0) {
      profiler::record(comm_, c.step, kStepSendWait, step_bytes(c.bytes, c.n_steps, m.step));
      // Read after the call: the plugin's own reading is then never later than this.
      posted[m.channel] = clock_ns();
    } else if (m.what == 1) {
      end_step(c, m.step);
      if (m.step + 1 == c.n_steps) {
        profiler::stop(comm_, c.handle);
        c.handle = nullptr;
      }
    } else {
      start_step(c, m.step);
    }
  }
  close_all();
  sleep_until_ns(t0 + duration_ns);
}

void ProxyEvents::close_all() {
  if (!active_) return;
  for (KernelChannel& k : kernels_) {
    profiler::stop(comm_, k.handle);
    k.handle = nullptr;
  }
  for (ChannelOp& c : channels_) {
    profiler::stop(comm_, c.step);
    profiler::stop(comm_, c.handle);
    c.step = c.handle = nullptr;
  }
  for (Task& t : tasks_) {
    profiler::stop(comm_, t.handle);
    t.handle = nullptr;
  }
  for (void*& h : op_events_) {
    profiler::stop(comm_, h);
    h = nullptr;
  }
  profiler::stop(comm_, group_);
  group_ = nullptr;
  active_ = false;
}

ProxyEvents::~ProxyEvents() {
  close_all();
}

}  // namespace ringside::sim::nccl
