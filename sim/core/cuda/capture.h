// Stream capture and CUDA graphs.  While a stream captures, the work enqueued on
// it is recorded (in order) instead of run; cuStreamEndCapture returns it as a
// graph, and each launch of the instantiated graph enqueues that work again on
// the launch stream.  Only single-stream captures are modelled (no fork/join
// through events, no graph editing).
//
// Capture modes follow CUDA: a "potentially unsafe" call (synchronization,
// event and stream queries, memory allocation) is refused with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and invalidates the capture, when the
// calling thread has its own non-relaxed capture going on, or when its mode
// (cuThreadExchangeStreamCaptureMode) is global and another thread runs a
// global-mode capture.  A thread in thread-local or relaxed mode may poll
// events while other threads capture.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "stream.h"

namespace ringside::sim {

struct CaptureSeq {
  uint64_t id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;
  std::atomic<bool> invalidated{false};

  void record(Task task) {
    std::lock_guard<std::mutex> lk(mu);
    tasks.push_back(std::move(task));
  }
  std::vector<Task> take() {
    std::lock_guard<std::mutex> lk(mu);
    return std::move(tasks);
  }

 private:
  std::mutex mu;
  std::vector<Task> tasks;
};

// CUDA_SUCCESS when the calling thread may make a potentially unsafe call now,
// else invalidates the captures it would interfere with and refuses.
CUresult check_capture_safe();

// CU_STREAM_CAPTURE_STATUS_* of a stream.
CUstreamCaptureStatus capture_status_of(StreamCore& s, uint64_t* id);

}  // namespace ringside::sim

// What cuStreamEndCapture returns and cuGraphInstantiate copies.
struct CUgraph_st {
  static constexpr uint32_t kMagic = 0x47524150;  // "GRAP"
  uint32_t magic = kMagic;
  std::vector<ringside::sim::Task> tasks;
};
struct CUgraphExec_st {
  static constexpr uint32_t kMagic = 0x47455845;  // "GEXE"
  uint32_t magic = kMagic;
  std::vector<ringside::sim::Task> tasks;
};
