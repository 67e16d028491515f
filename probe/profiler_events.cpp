#include "profiler_events.h"

#include <mutex>
#include <vector>

namespace ringside::probe::plugin {
namespace {

using namespace nccl_profiler;

// Handles given to NCCL point at one of these, tagged so that stop and record
// can tell a proxy op from a step.
enum class Kind : uint8_t { kOp = 1, kStep = 2 };

struct OpHandle;
struct StepHandle {
  Kind kind = Kind::kStep;
  OpHandle* op = nullptr;
  int64_t start_ns = 0, state_ns = 0;
  int state = 0;  // the State in progress; 0 before the first
  uint64_t bytes = 0;
  int64_t send_ns = 0;  // time in SendWait
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

// Proxy op handles are recycled, never freed: a late event for a stopped op then
// lands in a live object (at worst in the wrong counters), never in freed memory.
// A proxy thread starts and stops its ops itself, so each thread keeps a few free
// handles of its own (no lock); beyond that they go to a shared list.
class OpPool {
 public:
  OpHandle* get() {
    OpHandle* h = nullptr;
    if (local_count_ > 0) {
      h = local_[--local_count_];
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      if (!shared_.empty()) {
        h = shared_.back();
        shared_.pop_back();
      }
    }
    if (h == nullptr) return new OpHandle();
    h->counters = LinkCounters{};  // the steps are reset when they start
    return h;
  }
  void put(OpHandle* h) {
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
  static thread_local OpHandle* local_[kLocalHandles];
  static thread_local size_t local_count_;
  std::mutex mu_;
  std::vector<OpHandle*> shared_;
};

thread_local OpHandle* OpPool::local_[OpPool::kLocalHandles];
thread_local size_t OpPool::local_count_ = 0;

OpPool& op_pool() {
  static auto* pool = new OpPool();  // never destroyed: proxy threads outlive exit handlers
  return *pool;
}

// The time spent in the state that just ended goes to its bucket.
void close_state(StepHandle& s, int64_t now) {
  LinkCounters& c = s.op->counters;
  const int64_t d = now - s.state_ns;
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
      s.send_ns += d;
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
  if (activation_mask != nullptr) *activation_mask = kProxyOp | kProxyStep;
}

void start(void* context, void** handle, uint64_t type, void* parent, const ProxyOpDescr* op,
           int step, pid_t self) {
  *handle = nullptr;
  if (type == kProxyOp) {
    if (context == nullptr || op == nullptr) return;
    if (op->pid != self) return;  // PXN: the context lives in another process
    OpHandle* h = op_pool().get();
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
  auto* s = static_cast<StepHandle*>(handle);
  if (s == nullptr || s->kind != Kind::kStep) return;
  const int64_t now = clock();
  if (s->state == 0)
    s->start_ns = now;
  else
    close_state(*s, now);
  s->state = state;
  s->state_ns = now;
  // The step's size is current at these states only (stale at the others).
  if (args != nullptr &&
      (state == kStepSendWait || state == kStepRecvFlushWait || state == kStepRecvGpuWait)) {
    s->bytes = args->proxy_step.trans_size;
  }
}

void stop(void* handle, Clock clock) {
  if (handle == nullptr) return;
  if (*static_cast<Kind*>(handle) == Kind::kStep) {
    auto* s = static_cast<StepHandle*>(handle);
    const int64_t now = clock();
    if (s->state == 0)
      s->start_ns = now;  // stopped before any state: no time
    else
      close_state(*s, now);
    s->state = 0;
    LinkCounters& c = s->op->counters;
    ++c.steps;
    c.bytes += s->bytes;
    c.active_ns += now - s->start_ns;
    if (s->op->is_send) c.offer_step(s->bytes, s->send_ns);
    return;
  }
  auto* h = static_cast<OpHandle*>(handle);
  ++h->counters.ops;
  h->comm->merge(h->peer, h->channel, h->is_send, h->counters);
  op_pool().put(h);
}

}  // namespace ringside::probe::plugin
