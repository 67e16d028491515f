// The benchmark driver: for every datatype, op, root and size, times the
// collective out of place and in place, checks the results on the host, and
// fills the table (nccl-tests' TimeTest/BenchTime sequence).  With -t, one
// Runner per thread drives that thread's -g GPUs of the process; thread 0
// prints.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/options.h"
#include "bench/report.h"
#include "core/op_trace.h"
#include "core/world.h"

namespace ringside::bench {

// -I: CUDA events on every local rank's stream, `count` of them each.
class IterEvents {
 public:
  IterEvents(std::span<const LocalRank> ranks, int count);
  ~IterEvents();
  IterEvents(const IterEvents&) = delete;
  IterEvents& operator=(const IterEvents&) = delete;
  void record(int index);
  // The slowest local rank's time from event `from` to event `to`.
  double max_seconds(int from, int to) const;

 private:
  std::span<const LocalRank> ranks_;
  std::vector<std::vector<cudaEvent_t>> events_;
};

// -I's columns from per-iteration times (nccl-tests: nearest-rank p99,
// population standard deviation over the mean).
IterStats summarize_iterations(std::span<const double> seconds);

class Runner {
 public:
  // `thread`: which of the process's -t threads this is (its GPUs are the
  // thread-th block of -g local ranks).
  Runner(World& world, const BenchOptions& options, const Report& report, OpTrace* trace,
         int thread = 0);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  Summary run();

 private:
  struct Setup {
    const DataType* type = nullptr;
    const RedOp* op = nullptr;
    int root = 0;
    uint64_t size = 0;  // requested size (-b..-e)
    Counts c;
  };
  struct Local {
    void* send = nullptr;
    void* recv = nullptr;
    std::vector<std::byte> host;
  };

  Setup make_setup(const DataType* type, const RedOp* op, int root, uint64_t size) const;
  // Names the work of `s` in failure messages (what_).
  void describe(const char* phase, const Setup& s, bool in_place);
  void issue(const Setup& s, bool in_place, bool capturing);
  // Waits for this thread's streams; `timed`: the wait ends a measurement.
  void sync_all(bool trace_complete, bool timed = false);
  void barrier();
  void warm_up(const DataType* type, const RedOp* op, int root);
  Measurement bench_time(const Setup& s, bool in_place);
  int64_t check_once(const Setup& s, bool in_place, int rep);
  IterStats iteration_stats(const IterEvents& events, bool paired);
  double combine_time(double seconds);
  std::span<LocalRank> mine() const;

  World& world_;
  const BenchOptions& o_;
  const Report& report_;
  OpTrace* trace_;
  const size_t first_;   // this thread's first local rank
  const bool printing_;  // thread 0 writes the report
  Watchdog& wd_;
  const std::vector<CommStream> cs_;  // this thread's communicators and streams
  std::string what_;                  // the work being waited for, for failure messages
  std::vector<Local> locals_;
  size_t buffer_bytes_ = 0;
  int rep_ = 0;
  double bw_sum_ = 0;
  int bw_count_ = 0;
};

// Runs the benchmark with one Runner per -t thread (inline when -t 1) and
// returns thread 0's summary; an error in any thread stops the others (their
// waits give up) and is rethrown here, a communicator failure first.
Summary run_benchmark(World& world, const BenchOptions& options, const Report& report,
                      OpTrace* trace);

}  // namespace ringside::bench
