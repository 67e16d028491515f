// The job as seen from its trace directory: per-rank metadata and end state,
// the communicators (members joined from every rank's comm table), and small
// per-rank summaries.  Op records are NOT kept here: passes over them stream
// one file at a time (see match/).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "load/gpu_summary.h"
#include "load/op_window.h"
#include "load/rank_file.h"
#include "load/rank_tables.h"
#include "load/window_rows.h"
#include "parallel/process_group.h"
#include "progress.h"
#include "ringside/status.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_reader_cache.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

struct RankInfo {
  int64_t rank = -1;
  bool has_file = false;
  std::string path;
  std::string node;
  int node_index = -1;
  int64_t local_rank = -1;
  int64_t gpu_device = -1;
  std::string gpu_name, gpu_uuid, gpu_pci_bus_id;
  int64_t pid = 0;
  std::string producer;
  bool simulated = false;
  // job time = trace-local time + shift_ns - offset_ns
  int64_t shift_ns = 0;   // from the file's clock reference (CLOCK_REALTIME)
  int64_t offset_ns = 0;  // estimated clock error of its node (clock alignment)
  int64_t clock_monotonic_ns = 0;
  uint64_t op_count = 0;
  uint64_t first_row = 0;  // of /ops, where a window (load/op_window.h) begins
  uint64_t ops_dropped = 0;
  std::vector<trace::OpRecord> pending;    // the last /pending snapshot
  std::vector<trace::EventRecord> events;  // XIDs, signals, errors, watchdog, shutdown
  std::vector<ClockSample> clock_samples;
  // Trace-local times at which its communicators were created, ascending.
  std::vector<int64_t> comms_created;
  GpuSummary gpu;
  // /links summed over its flush windows (load/link_windows.h).  Empty without
  // profiler plugin events.
  std::vector<trace::LinkRecord> links;
  int64_t last_flush_local = trace::kUnknownTime;  // time of the last /stats row
  // (trace-local flush time, host_run_delay_ns) of /stats rows that know it.
  std::vector<std::pair<int64_t, int64_t>> run_delay;
  // CPU time of the probe's own threads up to the last /stats row; 0: unknown.
  int64_t probe_cpu_ns = 0;
  bool shutdown = false;  // a clean end of tracing was recorded
  int64_t last_signal = 0;
  std::string read_error;  // set if part of the file could not be read

  int64_t to_job(int64_t local) const {
    return local == trace::kUnknownTime ? trace::kUnknownTime : local + shift_ns - offset_ns;
  }
  // Whether it created a communicator in (from, to], job ns: a gap between its ops that
  // holds one holds set-up (a unique id made and shared, ncclCommInitRank waiting for the
  // other members), not compute (match/own_compute.h, match/rank_stats.h).
  // Most gaps come after the last creation (communicators are made as the job starts): told
  // apart here, without a search.
  bool made_comm_in(int64_t from, int64_t to) const {
    return !comms_created.empty() && from - (shift_ns - offset_ns) < comms_created.back() &&
           made_comm_in_searched(from, to);
  }

 private:
  bool made_comm_in_searched(int64_t from, int64_t to) const;
};

struct CommInfo {
  uint64_t id = 0;
  int index = 0;
  int nranks = 0;
  uint64_t parent = 0;
  int color = -1;
  uint32_t ordinal = 0;
  uint8_t origin = 0;
  std::vector<int64_t> members;  // global rank by comm rank (-1: no trace told us)
  std::vector<int> nodes;        // node indices of the known members
  int present = 0;               // members with a readable trace
  bool intra_node = true;
  // Inferred from membership after the ops are matched (match/comm_roles.h):
  // "world", "tp", "pp", "dp", or "" when nothing fits.
  std::string role;
  std::string label;  // "world", "tp[4,5] on node2", "dp{1,3,5,7}", ...

  std::string id_hex() const;
};

struct TraceSet {
  std::string dir;
  std::string job_id;
  std::string step_id;  // Slurm job step, "" if none
  int64_t world_size = 0;
  std::vector<RankInfo> ranks;     // index = global rank
  std::vector<std::string> nodes;  // node names in order of first rank
  std::vector<std::vector<int64_t>> node_ranks;
  std::vector<CommInfo> comms;
  std::unordered_map<uint64_t, int> comm_index;
  std::vector<std::string> warnings;  // corrupt or unreadable files, named
  // Ranks whose file exists but whose data could not be used (corrupt, out of
  // range), with the reason: analyzed as missing, reported as bad_trace.
  struct BadRank {
    int64_t rank;
    std::string reason;
  };
  std::vector<BadRank> bad_ranks;
  int64_t base_realtime_ns = 0;
  bool simulated = false;
  OpWindow window;  // inactive: every op is analyzed

  const CommInfo* comm(uint64_t id) const {
    auto it = comm_index.find(id);
    return it == comm_index.end() ? nullptr : &comms[static_cast<size_t>(it->second)];
  }
  // Position of `global_rank` in the comm, -1 if not a member.
  int comm_rank_of(const CommInfo& c, int64_t global_rank) const;
};

struct LoadOptions {
  size_t clock_sample_window = 512;  // ops read at the start of each file for clock alignment
  std::optional<std::string> step;   // see AnalyzeOptions::step
  uint64_t window_ops = 0;           // see AnalyzeOptions::window_ops
  OpWindowCache* window_cache = nullptr;
  trace::TraceDirCache* dir_cache = nullptr;        // see AnalyzeOptions::dir_cache
  trace::TraceReaderCache* reader_cache = nullptr;  // see AnalyzeOptions::reader_cache
  WindowRowCache* row_cache = nullptr;              // see AnalyzeOptions::row_cache
  RankTablesCache* tables_cache = nullptr;          // see AnalyzeOptions::tables_cache
  // Set: one of the processes of a parallel analysis, which list and read a share of
  // the files each and exchange what they read (parallel/load_exchange.h).
  ProcessGroup* group = nullptr;
};

// Opens every rank file once: metadata, comm tables, events, stats, pending
// snapshot, GPU sample summary and clock samples; with a window, its rows, to
// cut it (load/op_window.h).  Errors: what
// list_trace_dir rejects (not a directory, mixed jobs, unreadable schema).
Result<TraceSet> load_trace_set(const std::string& dir, const LoadOptions& options,
                                Progress& progress);

// Counts each communicator's members with a usable trace, and their nodes.
void count_comm_members(TraceSet& set);
// Ranks whose data could not all be read (read_error set) are not used: their
// file is treated as missing and they are listed in bad_ranks.  True if any.
bool exclude_unreadable_ranks(TraceSet& set);

}  // namespace ringside::analysis
