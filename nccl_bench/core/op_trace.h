// Writes the benchmark's own NCCL ops to ringside traces (one file per rank,
// producer "nccl_bench", same schema as the probe) so `ringside analyze` reads
// them.  Device times come from CUDA events around each op, converted to the
// host clock when the stream is next synchronised.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/world.h"
#include "ringside/trace_schema.h"
#include "ringside/trace_writer.h"

namespace ringside::bench {

struct OpDesc {
  trace::OpKind kind = trace::OpKind::kUnknown;
  uint64_t count = 0;
  uint64_t bytes = 0;  // nccl-tests size
  int peer = -1;       // root, or send/recv peer
  uint8_t dtype = 0;
  uint8_t redop = 0;
  uint8_t flags = 0;
};

class OpTrace {
 public:
  // Creates `dir` if needed and one file per local rank.  `config_json` goes to
  // the `config` attribute.  Throws RuntimeError when a file cannot be created.
  OpTrace(const std::string& dir, World& world, const std::string& config_json);
  ~OpTrace();
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

  // Around the NCCL call(s) of one op on local rank `local`.  `timed` = record
  // device events (false while a stream is capturing a graph).
  void before(size_t local, bool timed);
  void after(size_t local, const OpDesc& op);  // may be called twice (send + recv)
  void end_op(size_t local);
  // The stream of `local` has been synchronised: resolve device times, append.
  void complete(size_t local);
  // Flushes local ranks first .. first+count-1 (a thread flushes its own).
  void flush(size_t first, size_t count);
  // Ends the traces after a communicator failure, as the probe records one: the
  // failure (an async-error or watchdog event), the ops still outstanding as the
  // last /pending snapshot, the abort, those ops as abandoned, then close().
  // No other thread may be using the trace.
  void close_after_failure(const CommFailure& failure);
  // Records the clean end of tracing and closes the files; idempotent.
  void close();
  const std::string& dir() const { return dir_; }

 private:
  struct Pending {
    trace::OpRecord rec;
    int event_slot;  // -1: untimed
  };
  struct PerLocal {
    std::unique_ptr<trace::TraceWriter> writer;
    CommStream cs;
    int rank = 0;
    int nranks = 1;
    uint64_t seq = 0;
    std::vector<uint32_t> send_seq, recv_seq;
    std::vector<cudaEvent_t> events;  // pairs: start at 2k, end at 2k+1
    int next_slot = 0;
    int current_slot = -1;
    int64_t current_enter = 0;
    std::vector<Pending> pending;
    uint64_t recorded = 0;
    int64_t base_ns = 0;  // the file's clock_monotonic_ns
  };
  void check(const Status& s, const std::string& what);

  std::string dir_;
  uint64_t comm_id_ = 0;
  std::vector<PerLocal> locals_;
  bool closed_ = false;
};

}  // namespace ringside::bench
