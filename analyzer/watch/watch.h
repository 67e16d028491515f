// `ringside watch`: follows a running job's trace directory and reports
// findings while the job runs.  Each poll analyzes each rank's last ops (a
// window, load/op_window.h: the rows before it are scanned once, never
// re-read) of what the probes have flushed so far (SWMR reads) and compares the findings with the
// previous polls' (finding_debounce.h): new ones are printed, written as events and handed to the
// --on-finding command; cleared ones are written as events.  A poll that finds no trace file
// changed reuses the last analysis (unchanged_traces.h).  The watch ends when every rank's trace
// is closed or after --until, with the same final report as `ringside analyze`.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "analyze.h"
#include "ringside/trace_reader_cache.h"

namespace ringside::analysis::watch {

struct WatchOptions {
  std::string dir;
  double poll_s = 2;
  double until_s = 0;                // 0: until every trace is closed
  std::string events;                // JSON lines file ("-" = stdout), "" = none
  std::string prom;                  // Prometheus textfile, written atomically
  std::string on_finding;            // shell command per new finding
  double on_finding_timeout_s = 60;  // then SIGKILL
  std::string json;                  // final report
  bool quiet = false;                // no live status lines
  // Trace files kept open between polls (trace_reader_cache.h); unset: as many as
  // the open-file limit allows.  Each costs a descriptor and ~1.1 MB of HDF5 state, and
  // saves opening the file again at every poll (a quarter of a poll's CPU at 1024 ranks).
  std::optional<size_t> open_files;
  // Its window_ops applies to the polls (default: the last 4096 ops of each rank);
  // the final report is always of the whole job.
  AnalyzeOptions analyze = [] {
    AnalyzeOptions a;
    a.window_ops = 4096;
    return a;
  }();
};

// Returns the exit code: that of `ringside analyze` on the final state, or 2
// when the directory never held a readable trace before --until.
int run_watch(const WatchOptions& options, std::ostream& out, std::ostream& err);

// The watch's final report: `analyze` on the whole job, once every file `kept` open by
// the polls is closed (a file opened again in the process would be read as they saw it).
Result<Report> final_report(const WatchOptions& options, trace::TraceReaderCache& kept);

// The Prometheus text exposition of a report (label values escaped).
std::string prometheus_text(const Report& report);

}  // namespace ringside::analysis::watch
