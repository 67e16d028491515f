#include "group.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "cuda_bridge.h"
#include "executor.h"
#include "last_error.h"

namespace ringside::sim::nccl {
namespace {

struct PendingOp {
  std::shared_ptr<Comm> comm;
  cudaStream_t stream;
  OpDesc op;
  bool stall_before;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingOp> ops;
  std::vector<cudaStream_t> stall_streams;  // the device hangs after this group's ops
  std::vector<std::shared_ptr<Comm>> inits;
  const Comm* stop_comm = nullptr;  // set when a grouped op was the last before a stop
  int64_t stop_next_op = 0;
};

thread_local GroupState g_group;

ncclResult_t launch_pending(std::vector<PendingOp>& ops) {
  // One task per (comm, stream), in issue order.
  std::vector<std::pair<std::unique_ptr<Task>, cudaStream_t>> tasks;
  for (PendingOp& p : ops) {
    Task* t = nullptr;
    for (auto& [task, stream] : tasks) {
      if (task->comm == p.comm && stream == p.stream) t = task.get();
    }
    if (t == nullptr) {
      tasks.emplace_back(std::make_unique<Task>(), p.stream);
      t = tasks.back().first.get();
      t->comm = p.comm;
    }
    t->ops.push_back(p.op);
    t->stall_before.push_back(p.stall_before);
  }
  ncclResult_t result = ncclSuccess;
  for (auto& [task, stream] : tasks) {
    ncclResult_t r = launch_task(std::move(task), stream);
    if (result == ncclSuccess) result = r;
  }
  return result;
}

}  // namespace

// With RINGSIM_FAULT_LOG=FILE, each injected op fault appends one JSON line with
// the wall-clock moment it took effect: what a live tool's detection delay is
// measured from.
void log_fault(const char* kind, const Comm& comm, int64_t op) {
  const char* path = std::getenv("RINGSIM_FAULT_LOG");
  if (path == nullptr || path[0] == '\0') return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::string line =
      "{\"fault\": \"" + std::string(kind) + "\", \"rank\": " + std::to_string(comm.global_rank) +
      ", \"comm\": " + std::to_string(comm.comm_index) + ", \"op\": " + std::to_string(op) +
      ", \"unix_ms\": " + std::to_string(ms) + "}\n";
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t n = write(fd, line.data(), line.size());  // one write: no interleaving
  close(fd);
}

void stop_forever(const Comm& comm, int64_t next_op) {
  log_fault("stop", comm, next_op);
  debug_log(comm.label() + ": stop fault: this rank stops issuing ops before op " +
            std::to_string(next_op) + " of comm index " + std::to_string(comm.comm_index));
  for (;;) pause();
}

void number_op(Comm& comm, OpDesc& op) {
  std::lock_guard<std::mutex> lock(comm.issue_mu);
  op.op_index = comm.op_count++;
  switch (op.func) {
    case Func::kSend:
      op.seq = comm.send_seq[op.root]++;
      break;
    case Func::kRecv:
      op.seq = comm.recv_seq[op.root]++;
      break;
    default:
      op.seq = comm.coll_seq++;
      break;
  }
}

ncclResult_t issue_op(const std::shared_ptr<Comm>& comm, OpDesc op, cudaStream_t stream) {
  bool stall = false;
  bool stop_after = false;
  number_op(*comm, op);
  const Cluster& c = cluster();
  if (const OpFault* f = c.op_fault(OpFaultKind::kCrash, comm->global_rank, comm->comm_index);
      f && f->op == op.op_index) {
    warn(comm->label() + ": crash fault: global rank " + std::to_string(comm->global_rank) +
         " aborts at op " + std::to_string(op.op_index) + " (" + func_name(op.func) +
         ") of comm index " + std::to_string(comm->comm_index));
    log_fault("crash", *comm, op.op_index);
    std::abort();
  }
  // The device hangs right after the op before the stalled one, so the stalled op never
  // starts (nor does anything enqueued after it).  Op 0 has no op before it: its own task
  // blocks instead, on a device that has started it.
  bool stall_after = false;
  if (const OpFault* f = c.op_fault(OpFaultKind::kStall, comm->global_rank, comm->comm_index)) {
    stall = f->op == 0 && op.op_index == 0;
    stall_after = f->op > 0 && f->op == op.op_index + 1;
    if (stall || stall_after) log_fault("stall", *comm, f->op);
  }
  // freeze: the device starts the op and it never finishes (its data never arrives).
  if (const OpFault* f = c.op_fault(OpFaultKind::kFreeze, comm->global_rank, comm->comm_index);
      f && f->op == op.op_index) {
    stall = true;
    log_fault("freeze", *comm, op.op_index);
  }
  if (const OpFault* f = c.op_fault(OpFaultKind::kStop, comm->global_rank, comm->comm_index);
      f && f->op == op.op_index + 1) {
    stop_after = true;
  }
  const bool empty = op.count == 0;  // NCCL returns at once for zero-sized ops
  if (g_group.depth > 0) {
    if (!empty || stall) g_group.ops.push_back(PendingOp{comm, stream, op, stall});
    if (stall_after) g_group.stall_streams.push_back(stream);
    if (stop_after) {
      g_group.stop_comm = comm.get();
      g_group.stop_next_op = op.op_index + 1;
    }
    return ncclSuccess;
  }
  ncclResult_t r = ncclSuccess;
  if (!empty || stall) {
    auto task = std::make_unique<Task>();
    task->comm = comm;
    task->ops.push_back(op);
    task->stall_before.push_back(stall);
    r = launch_task(std::move(task), stream);
  }
  if (stall_after && r == ncclSuccess) r = stream_stall_after_queued(stream);
  if (stop_after) stop_forever(*comm, op.op_index + 1);
  return r;
}

ncclResult_t group_start() {
  ++g_group.depth;
  return ncclSuccess;
}

bool in_group() {
  return g_group.depth > 0;
}

void group_add_init(const std::shared_ptr<Comm>& comm) {
  g_group.inits.push_back(comm);
}

ncclResult_t group_end() {
  if (g_group.depth == 0)
    return fail(ncclInvalidUsage, "ncclGroupEnd called without a matching ncclGroupStart");
  if (--g_group.depth > 0) return ncclSuccess;
  ncclResult_t result = ncclSuccess;
  std::vector<std::shared_ptr<Comm>> inits;
  inits.swap(g_group.inits);
  for (auto& c : inits) {
    ncclResult_t r = c->blocking ? c->wait_ready() : ncclSuccess;
    if (result == ncclSuccess && r != ncclSuccess) result = r;
  }
  std::vector<PendingOp> ops;
  ops.swap(g_group.ops);
  ncclResult_t r = launch_pending(ops);
  if (result == ncclSuccess) result = r;
  std::vector<cudaStream_t> stalls;
  stalls.swap(g_group.stall_streams);
  for (cudaStream_t s : stalls) {
    r = stream_stall_after_queued(s);
    if (result == ncclSuccess) result = r;
  }
  if (g_group.stop_comm != nullptr) {
    const Comm* c = g_group.stop_comm;
    g_group.stop_comm = nullptr;
    stop_forever(*c, g_group.stop_next_op);
  }
  if (result == ncclSuccess && !inits.empty()) {
    for (auto& c : inits) {
      if (!c->blocking && c->init_state.load() == ncclInProgress) return ncclInProgress;
    }
  }
  return result;
}

}  // namespace ringside::sim::nccl
