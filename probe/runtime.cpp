#include "runtime.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include "background.h"
#include "cuda_driver.h"
#include "ringside/trace_meta.h"
#include "ringside/trace_writer.h"

extern char** environ;

namespace ringside::probe {

std::atomic<int> g_state{kStateUninit};
thread_local bool t_in_probe RINGSIDE_TLS = false;

namespace {

std::atomic<Runtime*> g_runtime{nullptr};
thread_local ThreadState* t_state RINGSIDE_TLS = nullptr;

// Returns a thread's ring to the pool when the thread exits.
struct ThreadRetirer {
  ThreadState* state = nullptr;
  ~ThreadRetirer() {
    if (state != nullptr) state->retired.store(true, std::memory_order_release);
    t_state = nullptr;
  }
};
thread_local ThreadRetirer t_retirer;

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void print_config_errors(const std::vector<std::string>& errors) {
  if (errors.empty()) return;
  std::string msg =
      "ringside probe: warning: problems in RINGSIDE_* settings (the rest of the "
      "configuration is used; see docs/probe.md):";
  for (const std::string& e : errors) msg += "\n  - " + e;
  std::fprintf(stderr, "%s\n", msg.c_str());
}

void initialize() {
  ConfigResult cfg = load_config(environ);
  print_config_errors(cfg.errors);
  if (cfg.config.dump_config) {
    std::fprintf(stderr, "ringside probe: effective configuration:\n%s", cfg.config.dump.c_str());
  }
  if (!cfg.config.enable) {
    g_state.store(kStateDisabled, std::memory_order_release);
    return;
  }

  auto* rt = new Runtime();
  rt->config = std::move(cfg.config);
  rt->pid = getpid();
  const std::string host = host_name();
  IdentityResult who = resolve_identity(process_env, rt->config.job_id, rt->config.node_name, host);
  rt->identity = who.identity;
  g_runtime.store(rt, std::memory_order_release);
  for (const std::string& w : who.warnings) log_warning("%s", w.c_str());

  trace::TraceMeta& m = rt->meta;
  m.schema_version = trace::kSchemaVersion;
  m.producer = "probe";
  m.job_id = rt->identity.job_id;
  m.step_id = rt->identity.step_id;
  m.rank = rt->identity.rank;
  m.local_rank = rt->identity.local_rank;
  m.world_size = rt->identity.world_size;
  m.rank_source = rt->identity.rank_source;
  m.node = rt->identity.node;
  m.hostname = rt->identity.hostname;
  m.pid = rt->pid;
  m.gpu_device = -1;
  m.config = rt->config.json;
  trace::stamp_clock_reference(m);

  if (rt->config.device_timing) {
    const CudaDriver& cuda = cuda_driver();
    if (cuda.can_time()) {
      rt->device_timing = true;
    } else {
      log_warning(
          "device timing is off: %s (set RINGSIDE_DEVICE_TIMING=0 to silence this)",
          cuda.loaded ? "libcuda.so.1 lacks an event or stream entry point" : cuda.error.c_str());
    }
  }

  // Our exit handler closes the trace before HDF5 shuts down: HDF5 either
  // leaves its shutdown to us (it was not initialised before) or registered
  // its handler before ours, which then runs first.  So a job that exits
  // while the writer is still creating the file waits for a complete trace.
  Result<bool> hdf5_ready = Status::error("not initialised");
  {
    std::lock_guard<std::timed_mutex> in_hdf5(rt->hdf5_gate);
    hdf5_ready = trace::TraceWriter::initialize_library();
  }
  if (!hdf5_ready.ok()) {
    log_warning("%s; the job continues untraced", hdf5_ready.message().c_str());
    g_state.store(kStateDisabled, std::memory_order_release);
    return;
  }
  rt->owns_hdf5_exit = hdf5_ready.value();
  register_exit_flush();

  std::string error;
  if (!start_writer(*rt, error)) {
    log_warning("cannot start the trace writer (%s); the job continues untraced", error.c_str());
    g_state.store(kStateDisabled, std::memory_order_release);
    return;
  }
  rt->writer_started.store(true, std::memory_order_release);
  if (!start_completer(*rt, error)) {
    log_warning("cannot start the completion thread (%s); device times and the watchdog are off",
                error.c_str());
    rt->device_timing = false;
  }
  if (rt->config.sample_hz > 0 || rt->config.xid_events) {
    if (!start_gpu_sampler(*rt, error)) log_warning("GPU counters are off: %s", error.c_str());
  }
  install_lifecycle_handlers(*rt);
  g_state.store(kStateActive, std::memory_order_release);
}

}  // namespace

Runtime* runtime() {
  return g_runtime.load(std::memory_order_acquire);
}

bool start_probe() {
  int expected = kStateUninit;
  if (g_state.compare_exchange_strong(expected, kStateStarting, std::memory_order_acq_rel)) {
    t_in_probe = true;
    try {
      initialize();
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "ringside probe: warning: start-up failed (%s); the job continues untraced\n",
                   e.what());
      g_state.store(kStateDisabled, std::memory_order_release);
    } catch (...) {
      std::fprintf(stderr,
                   "ringside probe: warning: start-up failed; the job continues untraced\n");
      g_state.store(kStateDisabled, std::memory_order_release);
    }
    t_in_probe = false;
  } else {
    // Another thread is starting the probe; it takes milliseconds (no file I/O).
    while (g_state.load(std::memory_order_acquire) == kStateStarting) sched_yield();
  }
  return g_state.load(std::memory_order_acquire) == kStateActive;
}

ThreadState* this_thread_state() {
  if (t_state != nullptr) return t_state;
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  // Reuse the ring of a thread that exited once everything in it is written.
  for (ThreadState* s = rt->threads.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    bool retired = true;
    if (s->retired.load(std::memory_order_acquire) && s->ring.head() == s->ring.tail() &&
        s->retired.compare_exchange_strong(retired, false, std::memory_order_acq_rel)) {
      s->group_depth = 0;
      s->cached_stream = nullptr;
      s->cached_ctx = nullptr;
      t_state = s;
      t_retirer.state = s;
      return s;
    }
  }
  auto* s = new (std::nothrow) ThreadState(rt->config.ring_size);
  if (s == nullptr) return nullptr;
  ThreadState* head = rt->threads.load(std::memory_order_relaxed);
  do {
    s->next = head;
  } while (!rt->threads.compare_exchange_weak(head, s, std::memory_order_release,
                                              std::memory_order_relaxed));
  t_state = s;
  t_retirer.state = s;
  return s;
}

int64_t now_ns() {
  return trace::monotonic_now_ns();
}

void emit_event(trace::EventKind kind, uint64_t comm_id, uint64_t seq, int64_t value, int device,
                const char* fmt, ...) {
  Runtime* rt = runtime();
  if (rt == nullptr) return;
  trace::EventRecord e{};
  e.t_ns = now_ns() - rt->meta.clock_monotonic_ns;
  e.comm_id = comm_id;
  e.seq = seq;
  e.value = value;
  e.device = device;
  e.kind = static_cast<uint32_t>(kind);
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(e.text, sizeof e.text, fmt, ap);
  va_end(ap);
  rt->events.push(e);
}

namespace {

// "ringside probe (rank R on NODE): LEVEL: MSG" (LEVEL info or warning), with the pid
// instead of the rank while the rank is not yet known.
void log_line(const char* level, const char* fmt, va_list ap) {
  char msg[1024];
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  Runtime* rt = runtime();
  if (rt != nullptr && rt->identity.rank >= 0) {
    std::fprintf(stderr, "ringside probe (rank %lld on %s): %s%s\n",
                 static_cast<long long>(rt->identity.rank), rt->identity.node.c_str(), level, msg);
  } else if (rt != nullptr && !rt->identity.node.empty()) {
    std::fprintf(stderr, "ringside probe (pid %lld on %s): %s%s\n", static_cast<long long>(rt->pid),
                 rt->identity.node.c_str(), level, msg);
  } else {
    std::fprintf(stderr, "ringside probe: %s%s\n", level, msg);
  }
}

}  // namespace

void log_warning(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line("warning: ", fmt, ap);
  va_end(ap);
}

void log_info(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_line("info: ", fmt, ap);
  va_end(ap);
}

void request_flush() {
  Runtime* rt = runtime();
  if (rt == nullptr) return;
  rt->flush_requested.store(true, std::memory_order_release);
  rt->writer_wake.wake();
}

void disable_tracing() {
  int s = kStateActive;
  g_state.compare_exchange_strong(s, kStateDisabled, std::memory_order_acq_rel);
  Runtime* rt = runtime();
  if (rt != nullptr) rt->stopping.store(true, std::memory_order_release);
}

}  // namespace ringside::probe
