// `ringside export DIR --perfetto FILE`: the job's timeline in the Trace Event
// Format, for Perfetto (ui.perfetto.dev) or chrome://tracing.  One process per
// node; per rank one track per CUDA stream (more when ops on a stream overlap,
// so every track nests); each collective and send/recv a slice with its
// communicator, sequence number, bytes and bus bandwidth; GPU counters as
// counter tracks; the report's findings as global instant events.
//
// Streams one rank file at a time into the output: memory does not grow with
// the number of ops.  A window (seconds of the job, or around a finding) keeps
// the file of a large job small enough to open.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ringside/status.h"

namespace ringside::analysis {

inline constexpr double kDefaultFindingSpan = 2.0;  // seconds shown around a finding

struct ExportOptions {
  // Seconds since the job's first op (the timeline's 0).
  std::optional<double> from_s, to_s;
  // 1-based index of a finding of the report: the window is centred on its op.
  std::optional<size_t> around_finding;
  double span_s = kDefaultFindingSpan;
  std::optional<std::string> step;  // as `ringside analyze --step`
  size_t batch = 8192;
};

struct ExportSummary {
  uint64_t events = 0, slices = 0, counters = 0, findings = 0;
  double from_s = 0, to_s = 0;  // the window written, seconds of the job
};

// Errors: what `ringside analyze` rejects, an output it must not replace, a
// finding index out of range or of a finding with no op to centre on.
Result<ExportSummary> export_perfetto(const std::string& dir, const std::string& out_path,
                                      const ExportOptions& options);

}  // namespace ringside::analysis
