// Entry points of the probe's background threads and process-lifecycle hooks.
#pragma once

#include <cstdint>
#include <string>

namespace ringside::trace {
class TraceWriter;
}

namespace ringside::probe {

struct Runtime;

// Each starts one thread with every signal blocked (signals must reach the
// application's threads, whose handlers wait for the writer).  They return
// false and say why when the thread cannot be started.
bool start_writer(Runtime& rt, std::string& error);
bool start_completer(Runtime& rt, std::string& error);    // device times + watchdog
bool start_gpu_sampler(Runtime& rt, std::string& error);  // NVML samples + XID events

// SIGTERM/SIGINT handlers, fork handler, exit handler.
void install_lifecycle_handlers(Runtime& rt);
// Called once HDF5 is initialised, so that our exit handler runs before
// HDF5's own (atexit handlers run in reverse order).
void register_exit_flush();
// Remembers the trace's writer, and HDF5's descriptor of its file so that a
// forked child can detach from it.  Called with the HDF5 gate held.
void remember_trace_file(const trace::TraceWriter& writer);

// Completes what can be completed now (final pass at shutdown; completer thread).
struct CompletionPass {
  uint64_t completed = 0;    // ops this pass completed
  bool outstanding = false;  // ops still running (or still being issued)
};
CompletionPass complete_device_ops(Runtime& rt, bool final_pass);
// Makes the completion thread's clock stream and events for `context`, which must be
// current on the calling application thread.  Once per context; cheap after that.
void prepare_clock(void* context);

}  // namespace ringside::probe
