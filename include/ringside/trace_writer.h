// Appends records to one rank's trace file.  One thread owns a writer.
//
// Records are buffered in memory up to one chunk per dataset and written as
// whole chunks; flush() writes partial chunks, the /stats row and the /pending
// snapshot, then makes everything visible to SWMR readers.  Memory is bounded
// by chunk_records x record size per dataset.  No call throws: errors come back
// as Status with the file name and the failing HDF5 call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "ringside/status.h"
#include "ringside/trace_meta.h"
#include "ringside/trace_schema.h"

namespace ringside::trace {

struct WriterOptions {
  size_t chunk_records = 4096;  // records per HDF5 chunk (and in-memory buffer) of /ops
  // The same for the tables that grow by a few rows per flush (all but /ops; never
  // more than chunk_records): each flush writes their partial last chunks whole
  // (unfiltered), so a writer that flushes often wants these small.
  size_t table_chunk_records = 256;
  int deflate_level = 4;  // 0 disables compression; shuffle is always on
};

// The options of a writer that flushes every second (the probe; `ringside synth`'s
// growing files, which stand for it): /ops chunks of 512 records and 32 for the tables
// that grow by a row or two per flush.  Every flush writes each dataset's partial last
// chunk whole: compressed, or (where it will take many flushes to fill) through no
// filter and in place, until it is full or the file closes (docs/trace-format.md).
WriterOptions flushing_writer_options();

class TraceWriter {
 public:
  // Initialises the HDF5 library now rather than at the first create().  If
  // nothing in the process initialised HDF5 before, HDF5 is asked to register
  // no exit handler of its own and the result is true: the caller then owns
  // HDF5's exit-time shutdown and calls close_library() when that is safe (a
  // forked child that inherited HDF5's global lock held by a thread it does
  // not have would wait for it forever).  False: HDF5 closes itself at exit,
  // after any exit handler registered from now on.
  static Result<bool> initialize_library();
  // Closes every HDF5 object and shuts the library down (H5close).
  static void close_library();
  // For a process that owns the shutdown (initialize_library() returned true), as it
  // ends: shuts HDF5 down when a file is still open, so that it is flushed and closed;
  // otherwise leaves it to the end of the process.  HDF5 1.10 does not free an object
  // header whose checksum failed, and a shutdown after reading such a damaged file prints
  // "HDF5: infinite loop closing library" and a line of its internals.
  static void end_library();

  // Creates `path` and writes the metadata attributes.  The file is built
  // under a hidden name in the same directory and renamed to `path` once
  // complete, replacing whatever had that name (a symlink there is replaced,
  // its target never touched).  The file is in SWMR-write mode when this returns.
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path, const TraceMeta& meta,
                                                     const WriterOptions& options = {});
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  Status append(std::span<const OpRecord> ops);
  Status append(std::span<const SampleRecord> samples);
  Status append(std::span<const EventRecord> events);
  Status append(std::span<const CommRecord> comms);
  Status append(std::span<const LinkRecord> links);

  // Makes all appended data durable and visible.  `pending` are the ops
  // outstanding now; they are written to /pending under this flush's index.
  // `stats.flush_index` and `stats.pending_ops` are filled in by the writer.
  Status flush(std::span<const OpRecord> pending, StatsRecord stats);

  // Flushes (without a pending snapshot unless given) and closes.  Idempotent.
  Status close();

  const std::string& path() const;
  uint64_t flushes() const;
  // HDF5's descriptor of the file (a process that forks can detach its
  // children from it).
  int descriptor() const;
  // HDF5 objects (files, datasets, groups, attributes) open in this process
  // outside this writer's file; -1 if HDF5 cannot say.
  int64_t objects_open_elsewhere() const;

  struct Impl;

 private:
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "ringside-<job>-r<rank, 6 digits>.h5", or "ringside-<job>.<step>-r<rank>.h5"
// for a Slurm job step.  Characters outside [A-Za-z0-9._-] become '_'.
std::string trace_file_name(const std::string& job_id, int64_t rank,
                            const std::string& step_id = "");

}  // namespace ringside::trace
