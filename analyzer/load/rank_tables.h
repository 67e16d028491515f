// A rank file's small append-only tables reduced to what the analysis needs:
// /stats (last flush, run-queue delay, drops), the /pending snapshot of the last
// flush and /gpu_samples (load/gpu_summary.h); and its /comms and /links rows.
// /progress is not read: what it says of each communicator is in /ops and /pending,
// which the analysis reads anyway.  `ringside analyze` reads them whole;
// `ringside watch` keeps them between polls (RankTablesCache) and reads only the
// rows appended since its last poll, and the /pending snapshot only when a new
// flush completed: samples grow by an hour's worth per hour of job, and were read
// whole at every poll (and the comm table, which rarely grows, was decoded again).
//
// A row still holding the fill value (flush_index 0, or an all-zero sample: its
// writer extended the table and has not written it yet, or was killed then) ends
// what is read; the next poll reads from it again.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "load/file_identity.h"
#include "load/gpu_summary.h"
#include "load/link_windows.h"
#include "ringside/status.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

struct RankTables {
  int64_t last_flush_local = trace::kUnknownTime;  // trace-local time of the last /stats row
  // (trace-local flush time, host_run_delay_ns) of /stats rows that know it.
  std::vector<std::pair<int64_t, int64_t>> run_delay;
  uint64_t ops_dropped = 0;
  trace::StatsRecord last_flush{};       // the last /stats row with a flush_index (0: none)
  std::vector<trace::OpRecord> pending;  // its /pending snapshot
  GpuSummaryBuilder gpu;
  // Set before the first update to also keep the samples' series (GpuSummary::series):
  // for a caller that reads the tables whole, once.
  bool with_series = false;
  std::vector<GpuPoint> series;

  // Rows of each table read so far.
  uint64_t stats_rows = 0, sample_rows = 0;
};

// Reads the rows of `reader`'s tables past those `t` has seen, checking each.
// On error `t` is partly updated: the caller drops it.
Status update_rank_tables(const trace::TraceReader& reader, RankTables& t);

// Appends to `comms` the /comms rows of `reader` past those it holds, each checked
// (trace::validate_comm against `world_size`).  On error `comms` is partly updated:
// the caller drops it.
Status update_comm_rows(const trace::TraceReader& reader, int64_t world_size,
                        std::vector<trace::CommRecord>& comms);

// Adds to `sums` the /links rows of `reader` past those it has added, each checked
// (trace::validate_link against `world_size`).  On error nothing is added.
Status update_link_rows(const trace::TraceReader& reader, int64_t world_size, LinkWindowSums& sums);

// RankTables and /comms rows kept by file path between `ringside watch` polls.
class RankTablesCache {
 public:
  // The tables of `reader`'s file, updated; a file replaced under the same name
  // (load/file_identity.h) is read anew.  On error nothing is kept for it.
  Result<const RankTables*> update(const trace::TraceReader& reader);
  // Likewise, its /comms rows (update_comm_rows).
  Result<const std::vector<trace::CommRecord>*> update_comms(const trace::TraceReader& reader,
                                                             int64_t world_size);
  // Likewise, its /links rows summed over their flush windows (load/link_windows.h),
  // each new row checked (trace::validate_link against `world_size`).
  Result<const std::vector<trace::LinkRecord>*> update_links(const trace::TraceReader& reader,
                                                             int64_t world_size);

 private:
  struct Held {
    FileIdentity id;
    RankTables tables;
    std::vector<trace::CommRecord> comms;
    int64_t comms_world_size = -1;  // what `comms` were checked against
    LinkWindowSums links;
    std::vector<trace::LinkRecord> links_summed;
    int64_t links_world_size = -1;  // what `links` were checked against
  };
  // The file's entry, emptied when it is another file than the one held.
  Held& held(const trace::TraceReader& reader);
  std::unordered_map<std::string, Held> files_;
};

}  // namespace ringside::analysis
