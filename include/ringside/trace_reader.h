// Reads one rank's trace file, including files whose writer is still running
// or was killed (opened with SWMR read, no h5clear needed).  Ops are read in
// windows so memory stays bounded whatever the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringside/file_stamp.h"
#include "ringside/status.h"
#include "ringside/trace_meta.h"
#include "ringside/trace_schema.h"

namespace ringside::trace {

class TraceReader {
 public:
  // Fails with a message naming the file for: missing file, not HDF5, not a
  // ringside trace, unsupported schema_version, missing or mistyped datasets.
  static Result<std::unique_ptr<TraceReader>> open(const std::string& path);
  // Opens the file for its op rows alone (op_count, read_ops, for_each_op_batch): a pass
  // over the op rows of a file that was opened whole before.  Neither its metadata nor
  // its other tables are read (meta() is empty; reading another table fails), which
  // halves what an open costs.  Not knowing /stats, it sees every row of /ops: the
  // caller reads no further than the whole open's op_count().
  static Result<std::unique_ptr<TraceReader>> open_ops(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const TraceMeta& meta() const;
  const std::string& path() const;
  // The file it reads, as stat(2) saw it when it was opened: its device, inode and
  // creation time name that file for as long as the reader lives (ringside/file_stamp.h).
  const FileStamp& stamp() const;

  // A reader sees its file as of the newest flush that was complete when it was
  // opened: each table up to the row counts that flush's /stats row announces
  // (docs/trace-format.md), so its ops, comms, /pending snapshot and last flush time
  // agree with each other.  sync() moves it on to the newest complete flush since,
  // reading only the tables that grew (TraceReaderCache calls it each time the file
  // changed).  Files written before /stats counted rows are read to each table's end:
  // each read refreshes its table, until the first sync(); from then on reads refresh
  // nothing and each later sync() marks every table to be refreshed when next read.
  void sync() const;

  uint64_t op_count() const;
  // Reads up to out.size() ops starting at `first`; returns how many were read.
  Result<size_t> read_ops(uint64_t first, std::span<OpRecord> out) const;
  // Calls `fn` on consecutive batches of at most `batch` ops from row `from` on;
  // stops early and returns the error if a read fails, or if fn returns false (then ok).
  Status for_each_op_batch(size_t batch, const std::function<bool(std::span<const OpRecord>)>& fn,
                           uint64_t from = 0) const;

  // Small tables, read whole, or from row `first` on (what a caller that read
  // them before has not seen yet; tables are append-only).
  Result<std::vector<SampleRecord>> samples(uint64_t first = 0) const;
  Result<std::vector<EventRecord>> events() const;
  Result<std::vector<CommRecord>> comms(uint64_t first = 0) const;
  // Per-peer transfer windows (profiler plugin); empty for files without them.
  Result<std::vector<LinkRecord>> links(uint64_t first = 0) const;
  Result<std::vector<StatsRecord>> stats(uint64_t first = 0) const;
  // Per-communicator progress at each flush; empty for files without it
  // (has_progress() false: written before the table existed).
  Result<std::vector<ProgressRecord>> progress(uint64_t first = 0) const;
  bool has_progress() const;
  // The ops outstanding at the last flush (the last /pending snapshot).
  Result<std::vector<OpRecord>> last_pending() const;
  // The ops outstanding at the flush of `last`, the last /stats row with a
  // flush_index (for a caller that holds it already).  The writer reuses
  // /pending's rows: if later flushes of a live file wrote over that snapshot
  // since `last` was read, the newest complete flush's snapshot is returned.
  Result<std::vector<OpRecord>> pending_of(const StatsRecord& last, int superseded_tries = 3) const;

  struct Impl;

 private:
  explicit TraceReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A job's trace directory: one file per rank.
struct TraceDirEntry {
  std::string path;
  int64_t rank = -1;
};

struct TraceDirListing {
  std::string job_id;
  std::string step_id;  // Slurm job step of the listed files; "" for none or unknown
  int64_t world_size = 0;
  std::vector<TraceDirEntry> files;    // readable rank files, sorted by rank
  std::vector<int64_t> missing_ranks;  // ranks 0..world_size-1 with no file
  std::vector<std::string> bad_files;  // "path: reason" for files that could not be opened
};

// Headers already read, by path, for a caller that lists one directory again
// and again (`ringside watch`): a file's metadata is written once, before any
// op, so a file that is still the same one (file_stamp.h: device, inode and
// creation time, no smaller) is not opened again to list it.
struct TraceDirCache {
  struct Entry {
    FileStamp stamp;  // when its header was read
    std::string job, step;
    int64_t rank = -1, world_size = 0;
  };
  std::map<std::string, Entry> files;
  // Files that could not be listed, and why: not checked again while their stamp is the
  // same (a check costs a child process, and a file that crashed HDF5 would crash it
  // again).  Only a file whose data had not changed for kSettledNs when it was checked is
  // remembered: one that a writer is still creating is checked at every listing.
  struct Failure {
    FileStamp stamp;  // when it was checked
    std::string error;
    bool unsupported_version = false;
  };
  std::map<std::string, Failure> failed;
  static constexpr int64_t kSettledNs = 2'000'000'000;
  uint64_t files_checked = 0;  // files checked so far (none that was known or remembered)
};

// Whether a directory entry's name is that of a trace file (ringside-*.h5).
bool is_trace_file_name(const std::string& name);

// What `--step` takes to select the files that have no step id (written
// outside a Slurm job step, or before step ids were recorded).
inline constexpr const char* kNoStep = "none";

// What opening one trace file's header found: the file's identity, or why it
// cannot be listed.
struct TraceFileCheck {
  std::string path;
  std::string error;                 // empty: usable
  bool unsupported_version = false;  // `error` is a schema version this build cannot read
  std::string job, step;
  int64_t rank = -1, world_size = 0;
};

// Opens the candidates' headers, one check per path in the same order: the first time
// in a child process (a corrupt attribute heap can crash or hang HDF5 itself), one
// for all of them while none crashes it; with `cache`, not again while a file is the
// same one.
std::vector<TraceFileCheck> check_trace_files(const std::vector<std::string>& paths,
                                              TraceDirCache* cache = nullptr);

// Checks every candidate file of a directory (sorted paths), returning one check per
// candidate in the same order: by default check_trace_files on all of them; a
// parallel analysis checks a share in each process and exchanges the results.
using CheckTraceFiles =
    std::function<std::vector<TraceFileCheck>(const std::vector<std::string>& candidates)>;

// Lists and opens the headers of every trace in `dir`.  Errors: not a
// directory, no trace files, files of more than one job (names the jobs),
// files of more than one Slurm job step when `step` is not given (names the
// steps), a `step` that has no files, schema versions it cannot read.
// Unreadable single files go to bad_files.  `step`: a step id, or kNoStep.
// `check`: how the candidates are checked (see CheckTraceFiles); unset: in turn.
Result<TraceDirListing> list_trace_dir(const std::string& dir,
                                       const std::optional<std::string>& step = std::nullopt,
                                       TraceDirCache* cache = nullptr,
                                       const CheckTraceFiles& check = {});

}  // namespace ringside::trace
