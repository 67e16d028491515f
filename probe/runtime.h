// The probe's process-wide state.  Created on the first NCCL call (so that
// processes which never call NCCL - shells, launchers - leave no trace file)
// and never destroyed: background threads and late NCCL calls during exit
// may still look at it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "bounded_queue.h"
#include "comm_registry.h"
#include "identity.h"
#include "op_ring.h"
#include "probe_config.h"
#include "ringside/trace_meta.h"
#include "ringside/trace_schema.h"
#include "waker.h"

#define RINGSIDE_TLS __attribute__((tls_model("initial-exec")))

namespace ringside::probe {

enum ProbeState : int {
  kStateUninit = 0,
  kStateStarting = 1,
  kStateActive = 2,       // tracing
  kStateDisabled = 3,     // RINGSIDE_ENABLE=0 or a fatal problem: pure pass-through
  kStateClosed = 4,       // trace closed at exit or on a fatal signal
  kStateForkedChild = 5,  // a fork()ed child: pass-through, never touches the parent's file
};

extern std::atomic<int> g_state;
extern thread_local bool t_in_probe RINGSIDE_TLS;

// Per application thread that called NCCL.  Reused after its thread exits.
struct ThreadState {
  explicit ThreadState(uint64_t ring_size) : ring(ring_size) {}
  OpRing ring;
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> retired{false};
  ThreadState* next = nullptr;  // immutable once linked
  // Owner thread only.
  int group_depth = 0;
  uint32_t group_counter = 0;
  uint32_t current_group = 0;
  uint64_t group_first = 0;             // ring index of the first op of the open group
  const void* cached_stream = nullptr;  // last stream -> context lookup
  void* cached_ctx = nullptr;
};

struct Runtime {
  ProbeConfig config;
  Identity identity;
  trace::TraceMeta meta;  // identity and clock reference; GPU fields filled by the writer
  int64_t pid = 0;
  bool device_timing = false;  // configured on and the driver can do it

  BoundedQueue<trace::EventRecord> events{8192};
  BoundedQueue<trace::CommRecord> comms{4096};
  BoundedQueue<trace::SampleRecord> samples{8192};
  std::atomic<ThreadState*> threads{nullptr};
  CommRegistry registry;
  std::atomic<uint64_t> probe_errors{0};

  // Set at the first communicator init: what the file needs to be named and described.
  std::atomic<bool> first_comm_seen{false};
  int64_t first_comm_rank = -1;
  int64_t first_comm_size = -1;
  int first_comm_device = -1;
  std::atomic<uint64_t> device_mask{0};  // CUDA ordinals (< 64) used by communicators

  // Init-path bookkeeping (never touched on the op hot path).
  std::mutex init_mutex;
  struct UniqueIdUse {
    uint32_t use = 0;      // communicators made from the id before the latest
    uint64_t devices = 0;  // CUDA ordinals (< 64) with a member of the latest
  };
  std::map<uint64_t, UniqueIdUse> unique_id_uses;
  uint32_t init_all_count = 0;

  // Held by whoever is inside HDF5 (the writer thread) and by fork() while
  // it copies the process (bounded wait): a child must not inherit HDF5's
  // global lock held by a thread it does not have (lifecycle.cpp, fork).
  std::timed_mutex hdf5_gate;
  // HDF5 registered no exit handler: the probe's exit handler runs HDF5's
  // shutdown instead, where that cannot hang (lifecycle.cpp).
  bool owns_hdf5_exit = false;

  // Writer coordination; all async-signal-safe.
  Waker writer_wake;
  std::atomic<bool> flush_requested{false};
  std::atomic<bool> close_requested{false};
  std::atomic<uint64_t> flushes_done{0};
  std::atomic<bool> writer_started{false};
  std::atomic<bool> writer_finished{false};
  std::atomic<bool> stopping{false};           // background threads should exit
  std::atomic<int> helper_threads_running{0};  // completer + samplers
  // Completion thread: woken for a prompt pass (shutdown); counts its passes.
  Waker completer_wake;
  std::atomic<uint64_t> completer_passes{0};
  // Ops the completion thread has looked at: moves while it works, stands still
  // while it is blocked (or not scheduled at all).
  std::atomic<uint64_t> completer_progress{0};
};

// The runtime once started, else nullptr.
Runtime* runtime();

bool start_probe();  // slow path of enter_probe()

// Wrapper gate: false when the call must go straight to NCCL (re-entry,
// disabled, closed, forked child).  Starts the probe on first use.
inline bool enter_probe() {
  if (t_in_probe) return false;
  const int s = g_state.load(std::memory_order_acquire);
  if (s == kStateActive) return true;
  return s == kStateUninit || s == kStateStarting ? start_probe() : false;
}

// Marks the calling thread as inside the probe for the scope's lifetime.
struct ProbeScope {
  ProbeScope() { t_in_probe = true; }
  ~ProbeScope() { t_in_probe = false; }
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;
};

// The calling thread's state, registered on first use; nullptr if it cannot be.
ThreadState* this_thread_state();

// Monotonic clock, ns.
int64_t now_ns();

// Queues an event (any thread, also from a signal handler when `text` has no
// format directives).  Never blocks; a full queue counts a drop.
void emit_event(trace::EventKind kind, uint64_t comm_id, uint64_t seq, int64_t value, int device,
                const char* fmt, ...) __attribute__((format(printf, 6, 7)));

// "ringside probe (rank R on NODE): warning: ..." on stderr (the pid instead of the rank
// while that is unknown).  Not for signal handlers.
void log_warning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// The same without "warning:", for what the user asked to see (RINGSIDE_DUMP_CONFIG).
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Asks the writer for an immediate flush (async-signal-safe).
void request_flush();

// Stops tracing for good after a fatal problem; the job continues untraced.
void disable_tracing();

}  // namespace ringside::probe
