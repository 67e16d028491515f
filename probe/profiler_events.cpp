#include "profiler_events.h"

#include <cstring>
#include <mutex>
#include <vector>

namespace ringside::probe::plugin {
namespace {

using namespace nccl_profiler;

// Handles given to NCCL point at one of these, tagged so that stop and record
// can tell them apart.
enum class Kind : uint8_t { kOp = 1, kStep = 2, kTask = 3, kKernel = 4 };

struct OpHandle;
// Times of steps and of their op's counters are in clock ticks until the op stops.
struct StepHandle {
  Kind kind = Kind::kStep;
  OpHandle* op = nullptr;
  int64_t start_ticks = 0, state_ticks = 0;
  int state = 0;  // the State in progress; 0 before the first
  uint64_t bytes = 0;
  int64_t send_ticks = 0;  // time in SendWait
};

// NCCL keeps at most 8 steps of a proxy op in flight and reuses a step's slot
// 8 steps later; a receive step may be started again without a stop, which
// simply restarts the slot.
struct OpHandle {
  Kind kind = Kind::kOp;
  PluginComm* comm = nullptr;
  int32_t peer = -1;
  uint8_t channel = 0;
  bool is_send = false;
  LinkCounters counters;
  StepHandle steps[8];
};

// A send/recv task: what its kernel channels need (they may outlive it).
struct TaskHandle {
  Kind kind = Kind::kTask;
  PluginComm* comm = nullptr;
  int32_t peer = -1;
  bool is_send = false;
  uint64_t channel_bytes = 0;  // the task's bytes over its channels
};

// One kernel channel of a send/recv task, timed by the GPU's own timer.
struct KernelHandle {
  Kind kind = Kind::kKernel;
  PluginComm* comm = nullptr;
  int32_t peer = -1;
  bool is_send = false;
  uint8_t channel = 0;
  uint64_t bytes = 0;
  uint64_t start_timer = 0, stop_timer = 0;
};

// Handles are recycled, never freed: a late event for a stopped one then lands
// in a live object (at worst in the wrong counters), never in freed memory.
// A thread often starts and stops its events itself (a proxy thread its ops),
// so each thread keeps a few free handles of its own (no lock); beyond that they
// go to a shared list.
template <class Handle>
class HandlePool {
 public:
  Handle* get() {
    Handle* h = nullptr;
    if (local_count_ > 0) {
      h = local_[--local_count_];
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      if (!shared_.empty()) {
        h = shared_.back();
        shared_.pop_back();
      }
    }
    return h != nullptr ? h : new Handle();
  }
  void put(Handle* h) {
    if (local_count_ < kLocalHandles) {
      local_[local_count_++] = h;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    shared_.push_back(h);
  }

 private:
  static constexpr size_t kLocalHandles = 64;
  // Plain arrays, with no destructor to run at thread exit: a proxy thread's late
  // event then still finds its cache (the handles in it are never freed).
  static thread_local Handle* local_[kLocalHandles];
  static thread_local size_t local_count_;
  std::mutex mu_;
  std::vector<Handle*> shared_;
};

template <class Handle>
thread_local Handle* HandlePool<Handle>::local_[HandlePool<Handle>::kLocalHandles];
template <class Handle>
thread_local size_t HandlePool<Handle>::local_count_ = 0;

// Never destroyed: proxy threads outlive exit handlers.
template <class Handle>
HandlePool<Handle>& pool() {
  static auto* p = new HandlePool<Handle>();
  return *p;
}

// The time spent in the state that just ended goes to its bucket.
void close_state(StepHandle& s, int64_t now) {
  LinkCounters& c = s.op->counters;
  const int64_t d = now - s.state_ticks;
  switch (s.state) {
    case kStepSendGpuWait:
    case kStepRecvFlushWait:
    case kStepRecvGpuWait:
      c.gpu_wait_ns += d;
      break;
    case kStepSendPeerWait:
      c.peer_wait_ns += d;
      break;
    case kStepSendWait:
      s.send_ticks += d;
      c.net_ns += d;
      break;
    case kStepRecvWait:
      c.net_ns += d;
      break;
    default:
      break;
  }
}

}  // namespace

void init(LinkTable& table, void** context, uint64_t comm_hash, int* activation_mask, int n_nodes,
          int nranks, int rank) {
  *context = table.add(comm_hash, nranks, rank, n_nodes);
  if (activation_mask != nullptr) *activation_mask = kProxyOp | kProxyStep | kP2p | kKernelCh;
}

size_t datatype_bytes(const char* datatype) {
  if (datatype == nullptr) return 0;
  // "nccl" + Int8, Uint32, Float16, Bfloat16, Float8e4m3, ...: the first number is bits.
  const char* p = datatype;
  while (*p != '\0' && (*p < '0' || *p > '9')) ++p;
  size_t bits = 0;
  while (*p >= '0' && *p <= '9' && bits < 1024) bits = bits * 10 + static_cast<size_t>(*p++ - '0');
  return bits % 8 == 0 ? bits / 8 : 0;
}

void start_task(void* context, void** handle, const char* func, const char* datatype, size_t count,
                int peer, uint8_t n_channels) {
  *handle = nullptr;
  if (context == nullptr || func == nullptr) return;
  // A copy to itself (NCCL makes one in alltoall) crosses no link.
  if (!static_cast<PluginComm*>(context)->valid_peer(peer)) return;
  const bool send = std::strcmp(func, "Send") == 0;
  if (!send && std::strcmp(func, "Recv") != 0) return;
  TaskHandle* t = pool<TaskHandle>().get();
  t->comm = static_cast<PluginComm*>(context);
  t->peer = peer;
  t->is_send = send;
  t->channel_bytes = count * datatype_bytes(datatype) / (n_channels > 0 ? n_channels : 1);
  *handle = t;
}

void start_kernel(void** handle, void* parent, uint8_t channel, uint64_t p_timer) {
  *handle = nullptr;
  auto* t = static_cast<TaskHandle*>(parent);
  if (t == nullptr || t->kind != Kind::kTask) return;  // a collective's channel
  KernelHandle* k = pool<KernelHandle>().get();
  k->comm = t->comm;
  k->peer = t->peer;
  k->is_send = t->is_send;
  k->channel = channel;
  k->bytes = t->channel_bytes;
  k->start_timer = p_timer;
  k->stop_timer = 0;
  *handle = k;
}

void start(void* context, void** handle, uint64_t type, void* parent, const ProxyOpDescr* op,
           int step, pid_t self) {
  *handle = nullptr;
  if (type == kProxyOp) {
    if (context == nullptr || op == nullptr) return;
    if (op->pid != self) return;  // PXN: the context lives in another process
    OpHandle* h = pool<OpHandle>().get();
    h->counters = LinkCounters{};  // the steps are reset when they start
    h->comm = static_cast<PluginComm*>(context);
    h->peer = op->peer;
    h->channel = op->channel_id;
    h->is_send = op->is_send != 0;
    *handle = h;
  } else if (type == kProxyStep) {
    auto* h = static_cast<OpHandle*>(parent);
    if (h == nullptr || h->kind != Kind::kOp) return;
    // NCCL records the step's first state right after starting it: the step's
    // time starts there (one clock reading fewer per step).
    StepHandle& s = h->steps[static_cast<unsigned>(step) % 8];
    s = StepHandle{};
    s.op = h;
    *handle = &s;
  }
}

void record(void* handle, int state, const StateArgs* args, Clock clock) {
  if (handle == nullptr) return;
  if (*static_cast<Kind*>(handle) == Kind::kKernel) {
    if (state == kKernelChStop && args != nullptr)
      static_cast<KernelHandle*>(handle)->stop_timer = args->kernel_ch.p_timer;
    return;
  }
  auto* s = static_cast<StepHandle*>(handle);
  if (s->kind != Kind::kStep) return;
  const int64_t now = clock();
  if (s->state == 0)
    s->start_ticks = now;
  else
    close_state(*s, now);
  s->state = state;
  s->state_ticks = now;
  // The step's size is current at these states only (stale at the others).
  if (args != nullptr &&
      (state == kStepSendWait || state == kStepRecvFlushWait || state == kStepRecvGpuWait)) {
    s->bytes = args->proxy_step.trans_size;
  }
}

void stop(void* handle, Clock clock, double ns_per_tick) {
  if (handle == nullptr) return;
  const Kind kind = *static_cast<Kind*>(handle);
  if (kind == Kind::kTask) {
    pool<TaskHandle>().put(static_cast<TaskHandle*>(handle));
    return;
  }
  if (kind == Kind::kKernel) {
    auto* k = static_cast<KernelHandle*>(handle);
    // Only a channel whose GPU timer ran forward, and not absurdly far, is a
    // measurement (a kernel channel of an hour is a broken reading).
    constexpr uint64_t kMaxKernelNs = 3600ull * 1000 * 1000 * 1000;
    if (k->stop_timer > k->start_timer && k->stop_timer - k->start_timer < kMaxKernelNs &&
        k->comm != nullptr) {
      LinkCounters c;
      const auto ns = static_cast<int64_t>(k->stop_timer - k->start_timer);
      c.ops = 1;
      c.bytes = k->bytes;
      c.active_ns = c.net_ns = ns;
      c.offer_step(k->bytes, ns);
      k->comm->merge(k->peer, k->channel, k->is_send, c, LinkSource::kKernel);
    }
    pool<KernelHandle>().put(k);
    return;
  }
  if (kind == Kind::kStep) {
    auto* s = static_cast<StepHandle*>(handle);
    const int64_t now = clock();
    if (s->state == 0)
      s->start_ticks = now;  // stopped before any state: no time
    else
      close_state(*s, now);
    s->state = 0;
    LinkCounters& c = s->op->counters;
    ++c.steps;
    c.bytes += s->bytes;
    c.active_ns += now - s->start_ticks;
    // Ticks scale alike, so the fastest step in ticks is the fastest in ns.
    if (s->op->is_send) c.offer_step(s->bytes, s->send_ticks);
    return;
  }
  auto* h = static_cast<OpHandle*>(handle);
  LinkCounters& c = h->counters;
  ++c.ops;
  for (int64_t* t : {&c.active_ns, &c.net_ns, &c.peer_wait_ns, &c.gpu_wait_ns, &c.best_step_ns})
    *t = static_cast<int64_t>(static_cast<double>(*t) * ns_per_tick);
  h->comm->merge(h->peer, h->channel, h->is_send, c);
  pool<OpHandle>().put(h);
}

}  // namespace ringside::probe::plugin
