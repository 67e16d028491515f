// Each rank's window of op rows held in memory between `ringside watch` polls.
//
// A poll analyzes each rank's last N ops (load/op_window.h) in several passes
// (matching, compute attribution, lateness).  Read from the file, every pass
// decompresses the whole window again, though between two polls a rank only
// appends a few rows.  This cache keeps rows [first_row, op_count) of each
// file: a poll reads only the rows appended since the last one, drops those
// that left the window, and every pass reads the same rows from memory.
// Memory is bounded by the window: ops_per_rank x sizeof(OpRecord) per rank.
//
// A file replaced under the same name (another device, inode or clock reference:
// a new file may get the inode of a removed one), or one that holds fewer rows
// than were cached, is read anew.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "load/file_identity.h"
#include "load/sliding_lowest.h"
#include "ringside/status.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

class WindowRowCache {
 public:
  // Brings the rows held for `path` to [first, end) of `reader`'s /ops,
  // reading only rows not held yet.  On error nothing is held for `path`.
  Status update(const std::string& path, const trace::TraceReader& reader, uint64_t first,
                uint64_t end);
  // The rows held for `path` (empty if none).
  std::span<const trace::OpRecord> rows(const std::string& path) const;
  // How many of those, from the first, pass trace::validate_op: each row is checked once,
  // when it is read, not again at every poll that analyzes it.
  size_t valid_rows(const std::string& path) const;
  // Notes in `firsts` the lowest sequence numbers among the rows held for `path`, as
  // WindowFirsts::note would for each (load/sliding_lowest.h: kept as rows come and go,
  // not scanned).  `me_in`: the rank's comm rank by comm id.
  void note_firsts(const std::string& path, const std::unordered_map<uint64_t, int32_t>& me_in,
                   WindowFirsts& firsts) const;
  void forget(const std::string& path) { files_.erase(path); }

  size_t files() const { return files_.size(); }
  uint64_t rows_held() const;
  uint64_t rows_read() const { return rows_read_; }  // read from files so far

 private:
  struct Held {
    FileIdentity id;
    uint64_t first = 0;  // file row of rows[skip]
    // rows[skip, end) are held: rows that left the window stay in front until they are an
    // eighth of the vector, so a poll does not move the whole window to drop a few rows.
    std::vector<trace::OpRecord> rows;
    size_t skip = 0;
    size_t valid = 0;  // held rows [0, valid) pass trace::validate_op; held row `valid` does not
    SlidingLowest lowest;  // of the held rows
    size_t held() const { return rows.size() - skip; }
  };
  std::unordered_map<std::string, Held> files_;
  uint64_t rows_read_ = 0;
};

// Rows [first, end) of `reader`'s /ops (fewer where the file holds fewer), read at once
// into a vector of their size.  `end`: the rows a whole open of the file announced,
// which an ops-only reader (TraceReader::open_ops) does not know.
Result<std::vector<trace::OpRecord>> read_op_rows(const trace::TraceReader& reader, uint64_t first,
                                                  uint64_t end);

}  // namespace ringside::analysis
