// What happens around the job's end: SIGTERM/SIGINT (Slurm sends SIGTERM,
// then SIGKILL after its grace period), a crash (SIGABRT, SIGSEGV, SIGBUS,
// SIGFPE, SIGILL with their default action), normal exit, and fork.
//
// A signal handler cannot do HDF5 I/O, so it asks the writer thread (which
// never receives signals) to flush, waits a bounded time, then hands the
// signal to what the application had installed: its handler, or the default
// action re-raised so that the exit status is the one the job would have had.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>

#include "background.h"
#include "ringside/trace_writer.h"
#include "runtime.h"

namespace ringside::probe {

namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT};
// Crash signals: recorded (the analyzer's proof of which rank died first, when a
// launcher kills the others right after), then the process dies of the signal as
// it would have.  Only where the process would die anyway (default action).
constexpr int kCrashSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[NSIG];
std::atomic<bool> g_shutdown_started{false};
constexpr int kMaxTraceFds = 4;
std::atomic<int> g_trace_fds[kMaxTraceFds] = {-1, -1, -1, -1};

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, nullptr);
}

// Async-signal-safe wait for a condition, bounded by the shutdown timeout.
// The bound is wall time: on a loaded node a 1 ms sleep can last tens of ms, and
// counting sleeps let a 200 ms bound stretch past Slurm's KillWait.
template <typename Pred>
bool wait_for(Runtime& rt, Pred done, long max_ms = -1) {
  long limit_ms = static_cast<long>(rt.config.shutdown_timeout_s * 1000);
  if (max_ms >= 0 && max_ms < limit_ms) limit_ms = max_ms;
  const int64_t deadline = now_ns() + static_cast<int64_t>(limit_ms) * 1'000'000;
  while (now_ns() < deadline) {
    if (done()) return true;
    sleep_ms(1);
  }
  return done();
}

// Waits until the completion thread has finished `passes` passes, for as long as
// it makes progress: it gives up after kCompleterStallMs without any.
constexpr long kCompleterStallMs = 300;

void wait_for_completer(Runtime& rt, uint64_t passes) {
  uint64_t seen = rt.completer_progress.load();
  int64_t last_move = now_ns();
  wait_for(rt, [&] {
    if (rt.completer_passes.load() >= passes) return true;
    const uint64_t progress = rt.completer_progress.load();
    const int64_t now = now_ns();
    if (progress != seen) {
      seen = progress;
      last_move = now;
    }
    return now - last_move > kCompleterStallMs * 1'000'000;
  });
}

void queue_signal_event(Runtime& rt, int sig) {
  // Built by hand: no printf in a signal handler.
  trace::EventRecord e{};
  e.t_ns = now_ns() - rt.meta.clock_monotonic_ns;
  e.value = sig;
  e.device = -1;
  e.kind = static_cast<uint32_t>(trace::EventKind::kSignal);
  const char* text = sig == SIGTERM   ? "SIGTERM received"
                     : sig == SIGINT  ? "SIGINT received"
                     : sig == SIGABRT ? "SIGABRT received (abort): the process crashes"
                     : sig == SIGSEGV ? "SIGSEGV received (segmentation fault): the process crashes"
                     : sig == SIGBUS  ? "SIGBUS received (bus error): the process crashes"
                     : sig == SIGFPE  ? "SIGFPE received (arithmetic error): the process crashes"
                     : sig == SIGILL  ? "SIGILL received (illegal instruction): the process crashes"
                                      : "signal received";
  strncpy(e.text, text, sizeof e.text - 1);
  rt.events.push(e);
}

void report_losses(Runtime& rt) {
  uint64_t dropped = 0;
  for (ThreadState* ts = rt.threads.load(); ts != nullptr; ts = ts->next)
    dropped += ts->dropped.load();
  const uint64_t events = rt.events.dropped() + rt.comms.dropped();
  const uint64_t samples = rt.samples.dropped();
  const uint64_t errors = rt.probe_errors.load();
  if (dropped + events + samples + errors == 0) return;
  char msg[400];
  const int n =
      snprintf(msg, sizeof msg,
               "ringside probe (rank %lld): lost %llu op records (ring full: raise "
               "RINGSIDE_RING_SIZE), %llu events, %llu GPU samples; %llu internal errors "
               "(counts are in the trace's /stats)\n",
               static_cast<long long>(rt.meta.rank), static_cast<unsigned long long>(dropped),
               static_cast<unsigned long long>(events), static_cast<unsigned long long>(samples),
               static_cast<unsigned long long>(errors));
  if (n > 0) [[maybe_unused]]
    ssize_t w = write(STDERR_FILENO, msg, static_cast<size_t>(n));
}

// Final flush and close.  Idempotent; safe from a signal handler (waits only
// on atomics, with a time limit).  From a signal handler it does not wait for
// the completion thread: the interrupted thread may hold a lock inside the
// CUDA driver that the completion thread needs (ops still on the device go to
// /pending instead).  The writer needs nothing the application holds.
void shutdown(Runtime& rt, bool from_signal) {
  if (g_shutdown_started.exchange(true)) {
    wait_for(rt, [&] { return rt.writer_finished.load(); });
    return;
  }
  int active = kStateActive;
  if (!g_state.compare_exchange_strong(active, kStateClosed)) return;  // disabled or failed already
  if (from_signal) {
    // One prompt completion pass, so that ops the device has finished are not left in
    // /pending.  The completer may need a driver lock the interrupted thread holds:
    // the wait ends once it has made no progress for a while.  A completer that is
    // merely behind (a loaded node, a long backlog) keeps going.
    const uint64_t before = rt.completer_passes.load();
    rt.completer_wake.wake();
    wait_for_completer(rt, before + 2);
  }
  rt.stopping.store(true);
  rt.completer_wake.wake();
  // The completer makes its final pass over device events before it exits.
  // Bounded tighter than the flush: a thread stuck in the driver must not hold up the exit.
  if (!from_signal)
    wait_for(
        rt, [&] { return rt.helper_threads_running.load() == 0; }, 1000);
  rt.events.push([&] {
    trace::EventRecord e{};
    e.t_ns = now_ns() - rt.meta.clock_monotonic_ns;
    e.device = -1;
    e.kind = static_cast<uint32_t>(trace::EventKind::kShutdown);
    strncpy(e.text, "trace closed", sizeof e.text - 1);
    return e;
  }());
  rt.close_requested.store(true);
  rt.writer_wake.wake();
  wait_for(rt, [&] { return rt.writer_finished.load(); });
  report_losses(rt);
}

void chain(int sig, siginfo_t* info, void* uctx) {
  const struct sigaction& old = g_previous[sig];
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction != nullptr) old.sa_sigaction(sig, info, uctx);
    return;
  }
  if (old.sa_handler == SIG_IGN) return;
  if (old.sa_handler == SIG_DFL) {
    // Default action (terminate): restore it and re-raise, so the process
    // dies of this signal exactly as it would have without the probe.
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    return;
  }
  old.sa_handler(sig);
}

void on_signal(int sig, siginfo_t* info, void* uctx) {
  const int saved_errno = errno;
  Runtime* rt = runtime();
  if (rt != nullptr && getpid() == rt->pid && g_state.load() == kStateActive) {
    queue_signal_event(*rt, sig);
    const struct sigaction& old = g_previous[sig];
    const bool terminates = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
    if (terminates) {
      shutdown(*rt, true);  // the process is about to die: close the file properly
    } else {
      // The application handles the signal and may go on: flush, keep tracing.
      const uint64_t before = rt->flushes_done.load();
      request_flush();
      wait_for(*rt, [&] { return rt->flushes_done.load() > before || rt->writer_finished.load(); });
    }
  }
  errno = saved_errno;
  chain(sig, info, uctx);
}

// Whether this process may run HDF5's exit-time shutdown when the probe owns
// it (TraceWriter::initialize_library).  The process that started the probe
// may; a forked child only if fork() held the gate, i.e. no probe thread was
// inside HDF5 (see on_fork_prepare), and its copies of the trace file's
// descriptors point at /dev/null.
std::atomic<bool> g_hdf5_shutdown_safe{true};
// The trace's writer once created (never destroyed).
std::atomic<const trace::TraceWriter*> g_trace_writer{nullptr};

// Whether a forked child has HDF5 objects of its own to close at exit.
// Closing the parent's copy of the trace costs every child tens of
// milliseconds (compressing its unwritten chunks, into /dev/null) and is of
// use to nobody.  When HDF5 cannot say, it is closed as HDF5 would have.
bool child_has_own_hdf5_objects() {
  const trace::TraceWriter* writer = g_trace_writer.load();
  if (writer == nullptr) return true;
  return writer->objects_open_elsewhere() != 0;
}

void on_exit_handler() {
  Runtime* rt = runtime();
  if (rt == nullptr) return;
  if (getpid() != rt->pid) {
    // A forked child never touches the trace.  HDF5's shutdown, which HDF5
    // left to us, still closes what the child itself opened with HDF5, as it
    // would have without the probe; unless HDF5's global lock may be held by
    // the parent's writer, which the child does not have: then it would wait
    // forever, so the child exits without it.
    if (rt->owns_hdf5_exit && g_hdf5_shutdown_safe.load() && child_has_own_hdf5_objects())
      trace::TraceWriter::close_library();
    return;
  }
  shutdown(*rt, false);
  // Not while the writer may still be inside HDF5 (stuck past the shutdown
  // timeout): that would hang the exit.
  if (rt->owns_hdf5_exit && (!rt->writer_started.load() || rt->writer_finished.load()))
    trace::TraceWriter::close_library();
}

// A child inherits HDF5's global lock (this HDF5 is thread-safe) held if the
// writer was inside HDF5 at fork time; the writer does not exist in the
// child, so any HDF5 call there, HDF5's exit-time shutdown included, would
// wait forever.  fork() therefore waits until the writer is out of HDF5 and
// keeps it out while the process is copied (the gate).  The wait is bounded,
// since a writer stuck in I/O must not hang the application's fork; a child
// forked without the gate is marked and never enters HDF5 through the probe.
// That last part cannot help when the application initialised HDF5 before the
// probe did: HDF5's own exit handler then runs in the child (docs/probe.md).
constexpr auto kForkGateWait = std::chrono::seconds(5);
thread_local bool t_fork_holds_gate = false;  // per forking thread: forks may overlap

void on_fork_prepare() {
  t_fork_holds_gate = false;
  Runtime* rt = runtime();
  // A forked child has no writer to wait for (its copy of the gate may even
  // be locked for good): its own children inherit its HDF5 state as it is.
  if (rt == nullptr || g_state.load() == kStateForkedChild) return;
  t_fork_holds_gate = rt->hdf5_gate.try_lock_for(kForkGateWait);
}

void on_fork_parent() {
  if (t_fork_holds_gate) runtime()->hdf5_gate.unlock();
  t_fork_holds_gate = false;
}

void on_fork_child() {
  if (g_state.load() != kStateForkedChild && !t_fork_holds_gate) g_hdf5_shutdown_safe.store(false);
  on_fork_parent();
  g_state.store(kStateForkedChild);
  // The child shares the parent's open trace file.  Point those descriptors
  // at /dev/null so that nothing in the child (HDF5's exit-time shutdown
  // included) can write into the parent's file.
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    g_hdf5_shutdown_safe.store(false);
    return;
  }
  for (auto& slot : g_trace_fds) {
    const int fd = slot.load();
    if (fd >= 0 && dup3(devnull, fd, O_CLOEXEC) < 0) g_hdf5_shutdown_safe.store(false);
  }
  close(devnull);
}

}  // namespace

void install_lifecycle_handlers(Runtime& rt) {
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(sig, &sa, &g_previous[sig]) != 0) {
      log_warning("cannot install the %s handler; a kill loses up to one flush interval of data",
                  sig == SIGTERM ? "SIGTERM" : "SIGINT");
      continue;
    }
    // An application that ignored the signal keeps ignoring it.
    if (!(g_previous[sig].sa_flags & SA_SIGINFO) && g_previous[sig].sa_handler == SIG_IGN) {
      sigaction(sig, &g_previous[sig], nullptr);
    }
  }
  for (int sig : kCrashSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
  pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
  (void)rt;
}

void register_exit_flush() {
  static std::atomic<bool> once{false};
  if (!once.exchange(true)) atexit(on_exit_handler);
}

void remember_trace_file(const trace::TraceWriter& writer) {
  g_trace_writer.store(&writer);
  const int fd = writer.descriptor();
  for (auto& slot : g_trace_fds) {
    int empty = -1;
    if (fd >= 0 && slot.compare_exchange_strong(empty, fd)) return;
  }
  // A child could not be detached from this file: it must not shut HDF5 down.
  g_hdf5_shutdown_safe.store(false);
}

}  // namespace ringside::probe
