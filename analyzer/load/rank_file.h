// What loading a trace directory reads from one rank file (load/trace_set.h): its
// metadata, comm table, notable events, small tables, links and the op rows a
// window or the clock alignment begins with.  Read on its own, so that the processes
// of a parallel analysis can each read a share of the files
// (parallel/load_exchange.h); joined into the trace set in rank order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/gpu_summary.h"
#include "load/op_window.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

struct LoadOptions;

// End time of one collective, kept for clock alignment.
struct ClockSample {
  uint64_t comm_id;
  uint64_t seq;
  int64_t end_ns;  // trace-local time
};

struct RankFile {
  int64_t rank = -1;
  std::string path;
  // Set: the file could not be opened (its rank is missing), or its comm table is
  // unreadable or out of range (missing, and a bad rank): nothing else is set.
  std::string open_error;
  std::string comms_error;
  std::vector<trace::CommRecord> comms;
  std::string node;  // the metadata's node, else its host name
  int64_t local_rank = -1, gpu_device = -1, pid = 0;
  std::string gpu_name, gpu_uuid, gpu_pci_bus_id, producer;
  bool simulated = false;
  int64_t clock_realtime_ns = 0, clock_monotonic_ns = 0;
  uint64_t op_count = 0, first_row = 0;
  // Parts that could not be read, in the order met: each makes the rank unused.
  std::vector<std::string> errors;
  std::vector<trace::EventRecord> events;  // the notable ones, at most 256
  bool shutdown = false;
  int64_t last_signal = 0;
  int64_t last_flush_local = trace::kUnknownTime;
  std::vector<std::pair<int64_t, int64_t>> run_delay;
  uint64_t ops_dropped = 0;
  int64_t probe_cpu_ns = 0;
  std::vector<trace::OpRecord> pending;
  GpuSummary gpu;
  std::vector<trace::LinkRecord> links;
  std::vector<ClockSample> clock_samples;
  WindowFirsts firsts;
};

// Reads `entry`'s file; `world_size`: the listing's, which bounds its comm table.
RankFile read_rank_file(const trace::TraceDirEntry& entry, int64_t world_size,
                        const LoadOptions& options);

}  // namespace ringside::analysis
