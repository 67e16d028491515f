// Streams as ordered worker threads. A StreamCore runs its tasks one at a time, in order,
// on its own thread; a task may first wait for positions in other streams (dependencies),
// which implements both cuStreamWaitEvent and the legacy default stream's implicit
// synchronization with blocking streams.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda.h>

namespace ringside::sim {

class StreamCore;
struct CaptureSeq;

struct StreamDep {
  std::shared_ptr<StreamCore> stream;
  uint64_t seq = 0;  // wait until that stream completed this many tasks
};

struct Task {
  std::function<void()> fn;
  unsigned flags = 0;  // RINGSIM_TASK_*
  std::vector<StreamDep> deps;
};

enum class StreamKind { kLegacy, kPerThread, kNormal };

class StreamCore {
 public:
  StreamCore(int device, unsigned flags, int priority, StreamKind kind);
  // Starts the worker thread; it holds a reference until the stream is retired and drained.
  static std::shared_ptr<StreamCore> create(int device, unsigned flags, int priority,
                                            StreamKind kind);

  int device() const { return device_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }
  StreamKind kind() const { return kind_; }
  // Synchronizes with the legacy default stream.
  bool blocking() const {
    return kind_ == StreamKind::kLegacy || (flags_ & CU_STREAM_NON_BLOCKING) == 0;
  }
  uint64_t id() const { return id_; }

  // Returns the task's sequence number (from 1).  While the stream captures, the task is
  // recorded into the capture instead, and the number of the last real task is returned.
  uint64_t enqueue(Task task);
  // Stream capture (capture.h): false if the stream is already capturing.
  bool begin_capture(std::shared_ptr<CaptureSeq> seq);
  std::shared_ptr<CaptureSeq> end_capture();  // nullptr if it was not capturing
  std::shared_ptr<CaptureSeq> capture();      // the ongoing capture, or nullptr
  uint64_t last_enqueued();
  bool done(uint64_t seq);
  void wait(uint64_t seq);
  void retire();  // no more tasks; the worker exits after draining
  void run();     // the worker loop (started by create() / legacy_stream())

 private:
  int device_;
  unsigned flags_;
  int priority_;
  StreamKind kind_;
  uint64_t id_;
  double slow_factor_ = 1;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Task> queue_;
  uint64_t enqueued_ = 0;
  // Written under mu_ (waiters sleep on done_cv_), read without it: a query of an
  // event never waits for a lock that another thread holds, as on a real device,
  // where the completion is a value in memory the GPU writes.
  std::atomic<uint64_t> completed_{0};
  bool retired_ = false;
  std::shared_ptr<CaptureSeq> capture_;
  // Worker thread only: a RINGSIM_TASK_STALL_GATE was passed; one event record may still run.
  bool stalled_ = false;
  bool stall_event_used_ = false;
};

// Enqueues on a stream, adding the legacy-default-stream dependencies; returns the seq.
uint64_t submit(const std::shared_ptr<StreamCore>& s, std::function<void()> fn, unsigned flags,
                std::vector<StreamDep> extra_deps = {});

// Registers a created stream with its device (for legacy ordering and device sync).
void register_stream(const std::shared_ptr<StreamCore>& s);
std::shared_ptr<StreamCore> legacy_stream(int device);
std::shared_ptr<StreamCore> per_thread_stream(int device);
// Waits for all work enqueued so far on every stream of the device.
void synchronize_device(int device);

}  // namespace ringside::sim

// The handle behind CUstream / cudaStream_t.
struct CUstream_st {
  static constexpr uint32_t kMagic = 0x5354524d;  // "STRM"
  uint32_t magic = kMagic;
  std::shared_ptr<ringside::sim::StreamCore> core;
};
