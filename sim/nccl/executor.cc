#include "executor.h"

#include "algorithms.h"
#include "cuda_bridge.h"
#include "group.h"
#include "last_error.h"
#include "op_run.h"
#include "pacing.h"
#include "proxy_events.h"

namespace ringside::sim::nccl {
namespace {

void stall_forever(Comm& comm, const OpDesc& op) {
  debug_log(comm.label() + ": stall/freeze fault: the device blocks in op " +
            std::to_string(op.op_index) + " (" + func_name(op.func) + ")");
  std::unique_lock<std::mutex> lock(comm.link->mu);
  comm.link->cv.wait(lock, [&] { return comm.link->aborted || comm.link->revoked; });
  throw OpFailed{ncclInvalidUsage};
}

bool broken(Comm& comm) {
  std::lock_guard<std::mutex> lock(comm.link->mu);
  return comm.link->error != ncclSuccess;
}

// What a GPU kernel does when a peer is gone: it never finishes. The stream stays
// blocked (so no wrong result is ever visible as complete) until the application,
// having seen ncclRemoteError from ncclCommGetAsyncError, aborts or revokes the comm.
void hang_until_released(Comm& comm) {
  std::unique_lock<std::mutex> lock(comm.link->mu);
  if (!comm.link->warned) {
    comm.link->warned = true;
    warn(comm.link->error_text +
         "; its ops block until ncclCommAbort (ncclCommGetAsyncError: ncclRemoteError)");
  }
  comm.link->cv.wait(lock, [&] { return comm.link->aborted || comm.link->revoked; });
}

bool is_p2p(const OpDesc& op) {
  return op.func == Func::kSend || op.func == Func::kRecv;
}

void run_task(Task& task) {
  Comm& comm = *task.comm;
  size_t i = 0;
  while (i < task.ops.size()) {
    {
      std::lock_guard<std::mutex> lock(comm.link->mu);
      // An aborted or revoked communicator runs nothing more.
      if (comm.link->aborted || comm.link->revoked) return;
    }
    if (broken(comm)) {
      hang_until_released(comm);
      return;
    }
    if (task.stall_before[i]) stall_forever(comm, task.ops[i]);
    OpDesc& op = task.ops[i];
    if (is_p2p(op)) {
      // Consecutive sends/recvs of the group progress together.
      std::vector<const OpDesc*> batch;
      int64_t cost = 0;
      for (; i < task.ops.size() && is_p2p(task.ops[i]); ++i) {
        if (i > 0 && task.stall_before[i] && !batch.empty()) break;
        batch.push_back(&task.ops[i]);
        cost = std::max(cost, model_duration_ns(comm, task.ops[i]));
      }
      ProxyEvents events(comm, batch);
      int64_t ready = run_p2p_batch(comm, batch);
      events.pace(ready, cost);
      continue;
    }
    if (op.device_scalar != nullptr) op.reduction.scalar = load_scalar(op.device_scalar, op.dtype);
    ProxyEvents events(comm, {&op});
    OpRun run(comm, op, MsgKind::kColl);
    run_collective(run);
    events.pace(run.ready_ns(), model_duration_ns(comm, op));
    ++i;
  }
}

void run_and_finish(Task& task) {
  try {
    run_task(task);
  } catch (const OpFailed& f) {
    if (f.code == ncclRemoteError) hang_until_released(*task.comm);
  }
  task.comm->op_finished();
}

void task_entry(void* arg) {
  std::unique_ptr<Task> task(static_cast<Task*>(arg));
  run_and_finish(*task);
}

// An op captured into a CUDA graph runs at every launch of the graph: `arg` is a
// template, numbered afresh each time (every rank launches its graphs in the same order).
void replay_entry(void* arg) {
  Task task = *static_cast<const Task*>(arg);
  for (OpDesc& op : task.ops) number_op(*task.comm, op);
  task.comm->op_started();
  run_and_finish(task);
}

}  // namespace

const char* func_name(Func f) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "AlltoAll",  "Gather", "Scatter",
                                       "Send",          "Recv",      "Control"};
  return kNames[static_cast<int>(f)];
}

ncclResult_t launch_task(std::unique_ptr<Task> task, cudaStream_t stream) {
  if (stream_capturing(stream)) {
    // Kept for as long as the graph may be launched, i.e. never freed.
    Task* captured = task.release();
    return stream_enqueue(stream, &replay_entry, captured);
  }
  std::shared_ptr<Comm> comm = task->comm;
  comm->op_started();
  Task* raw = task.release();
  ncclResult_t r = stream_enqueue(stream, &task_entry, raw);
  if (r != ncclSuccess) {
    delete raw;
    comm->op_finished();
  }
  return r;
}

}  // namespace ringside::sim::nccl
