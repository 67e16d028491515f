// Driver API: stream capture, capture modes and graph launch (see capture.h).
#include "capture.h"

#include <algorithm>
#include <memory>

#include "driver_state.h"

using namespace ringside::sim;

namespace ringside::sim {

namespace {

thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

struct Captures {
  std::mutex mu;
  std::vector<std::shared_ptr<CaptureSeq>> active;
  uint64_t next_id = 1;
};

Captures& captures() {
  static auto* c = new Captures();  // leaked: used by stream threads during exit
  return *c;
}

CUresult stream_of(CUstream h, bool ptsz, std::shared_ptr<StreamCore>* s) {
  if (!driver_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return resolve_stream(h, ptsz, s);
}

CUresult begin_capture(CUstream h, bool ptsz, CUstreamCaptureMode mode) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::shared_ptr<StreamCore> s;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  if (s->kind() == StreamKind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  auto seq = std::make_shared<CaptureSeq>();
  seq->mode = mode;
  seq->thread = std::this_thread::get_id();
  Captures& c = captures();
  std::lock_guard<std::mutex> lk(c.mu);
  seq->id = c.next_id++;
  if (!s->begin_capture(seq)) return CUDA_ERROR_ILLEGAL_STATE;
  c.active.push_back(std::move(seq));
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream h, bool ptsz, CUgraph* graph) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<StreamCore> s;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  std::shared_ptr<CaptureSeq> seq = s->end_capture();
  if (!seq) return CUDA_ERROR_ILLEGAL_STATE;
  {
    Captures& c = captures();
    std::lock_guard<std::mutex> lk(c.mu);
    std::erase(c.active, seq);
  }
  *graph = nullptr;
  if (seq->thread != std::this_thread::get_id() && seq->mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  if (seq->invalidated.load()) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  auto* g = new CUgraph_st;
  g->tasks = seq->take();
  *graph = g;
  return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec exec, CUstream h, bool ptsz) {
  if (exec == nullptr || exec->magic != CUgraphExec_st::kMagic) return CUDA_ERROR_INVALID_VALUE;
  std::shared_ptr<StreamCore> s;
  if (CUresult r = stream_of(h, ptsz, &s); r != CUDA_SUCCESS) return r;
  for (const Task& t : exec->tasks) submit(s, t.fn, t.flags);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult check_capture_safe() {
  if (t_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const auto me = std::this_thread::get_id();
  bool refused = false;
  Captures& c = captures();
  std::lock_guard<std::mutex> lk(c.mu);
  for (const auto& seq : c.active) {
    const bool own = seq->thread == me;
    const bool interferes =
        own ? seq->mode != CU_STREAM_CAPTURE_MODE_RELAXED
            : t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && seq->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (interferes) {
      seq->invalidated.store(true);
      refused = true;
    }
  }
  return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUstreamCaptureStatus capture_status_of(StreamCore& s, uint64_t* id) {
  std::shared_ptr<CaptureSeq> seq = s.capture();
  if (id != nullptr) *id = seq ? seq->id : 0;
  if (!seq) return CU_STREAM_CAPTURE_STATUS_NONE;
  return seq->invalidated.load() ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                 : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

}  // namespace ringside::sim

extern "C" {

CUresult cuStreamBeginCapture(CUstream h) {
  return begin_capture(h, false, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult cuStreamBeginCapture_ptsz(CUstream h) {
  return begin_capture(h, true, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  return begin_capture(h, false, mode);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  return begin_capture(h, true, mode);
}
CUresult cuStreamEndCapture(CUstream h, CUgraph* graph) {
  return end_capture(h, false, graph);
}
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph* graph) {
  return end_capture(h, true, graph);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, t_mode);
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  if (exec == nullptr || graph == nullptr || graph->magic != CUgraph_st::kMagic)
    return CUDA_ERROR_INVALID_VALUE;
  (void)flags;  // auto-free, upload and device launch change nothing on the sim
  auto* e = new CUgraphExec_st;
  e->tasks = graph->tasks;
  *exec = e;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream h) {
  return graph_launch(exec, h, false);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream h) {
  return graph_launch(exec, h, true);
}

CUresult cuGraphDestroy(CUgraph graph) {
  if (graph == nullptr || graph->magic != CUgraph_st::kMagic) return CUDA_ERROR_INVALID_VALUE;
  graph->magic = 0;
  delete graph;
  return CUDA_SUCCESS;
}
CUresult cuGraphExecDestroy(CUgraphExec exec) {
  if (exec == nullptr || exec->magic != CUgraphExec_st::kMagic) return CUDA_ERROR_INVALID_VALUE;
  exec->magic = 0;
  delete exec;
  return CUDA_SUCCESS;
}

}  // extern "C"
