// `ringside analyze`: the whole analysis of one trace directory.
//
// Passes (each reads one rank file at a time, so memory is bounded by the
// number of distinct ops of the job, never by ranks x ops; with several processes,
// each reads its share of the files and the pass's states are merged):
//   1. metadata, comm tables, events, GPU sample summaries, /pending, clock samples
//   2. clock alignment (no I/O)
//   3. match ops across ranks -> per-op aggregates (match/group_table.h)
//   4. per-rank lateness against the aggregates (match/rank_stats.h)
//   5. detectors, what-if, report (no I/O)
#pragma once

#include <optional>
#include <string>

#include "detect/context.h"
#include "load/rank_tables.h"
#include "load/window_rows.h"
#include "parallel/process_group.h"
#include "report/report.h"

namespace ringside::analysis {

// $TMPDIR, else /tmp.
std::string default_spill_dir();

struct AnalyzeOptions {
  Thresholds thresholds;
  size_t batch = 8192;   // ops per read
  bool progress = true;  // progress bar on stderr when it is a terminal
  // Slurm job step to analyze when the directory holds several (trace::kNoStep:
  // the files without a step id); unset: the directory must hold one step.
  std::optional<std::string> step;
  // Analyze only each rank's last this many ops, cut so that every member of an
  // op has it (load/op_window.h); 0: the whole job.
  uint64_t window_ops = 0;
  // Kept between calls on one directory (`ringside watch`): rows before a window
  // are scanned once.
  OpWindowCache* window_cache = nullptr;
  // Likewise: trace file headers already read (trace_reader.h).
  trace::TraceDirCache* dir_cache = nullptr;
  // Add the report's `views` (report/view_data.h): what the HTML report draws.
  bool views = true;
  // Likewise: trace files kept open between calls (trace_reader_cache.h).
  trace::TraceReaderCache* reader_cache = nullptr;
  // Likewise, with a window: each rank's window rows held between calls, so a call
  // reads only the rows appended since the last one, and its passes read them
  // from memory (load/window_rows.h).  Ignored without a window.
  WindowRowCache* row_cache = nullptr;
  // Likewise: each rank file's /stats, /pending, /gpu_samples and /progress, of which
  // a call reads only the rows appended since the last one (load/rank_tables.h).
  RankTablesCache* tables_cache = nullptr;
  // Without a window: the directory where the first pass keeps each rank's rows for the
  // passes after it, in an unlinked temporary file (load/row_spill.h); "": none, every
  // pass reads the traces.
  std::string spill_dir = default_spill_dir();
  // Set: this process is one of a parallel analysis (parallel/process_group.h).  Each
  // reads its share of the rank files in every pass and the passes' states are merged,
  // so process 0 gets the report one process would write; the others get an empty one.
  ProcessGroup* group = nullptr;
};

// Errors (exit code 2): not a trace directory, mixed jobs or steps, unreadable schema.
Result<Report> analyze_directory(const std::string& dir, const AnalyzeOptions& options);

}  // namespace ringside::analysis
