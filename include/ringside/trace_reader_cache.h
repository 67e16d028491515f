// Trace files kept open between reads, for a caller that reads one directory
// again and again (`ringside watch`): opening a file (SWMR open, metadata
// attributes, seven datasets checked against the schema) costs more than
// reading what a writer appended since the last poll, which a kept reader
// sees after TraceReader::sync(), called whenever the file changed.
//
// A file replaced under the same name (file_stamp.h: another device or inode,
// creation time, or a smaller size) is opened anew.  Open files cost a descriptor each: at most
// max_open() are kept; files beyond it are opened per use and closed after it, as without a cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringside/file_stamp.h"
#include "ringside/status.h"
#include "ringside/trace_reader.h"

namespace ringside::trace {

class TraceReaderCache {
 public:
  // Descriptors left for everything else a process opens (outputs, pipes,
  // HDF5's own) when the bound comes from the open-file limit.
  static constexpr uint64_t kSpareDescriptors = 64;

  // max_open: files kept open at most, and never more than the open-file limit
  // (its soft limit raised to the hard one first) less kSpareDescriptors; unset:
  // that limit.
  explicit TraceReaderCache(std::optional<size_t> max_open = std::nullopt);

  // A reader of `path`: the one kept open while the file is the same one, else
  // a newly opened one (kept while fewer than max_open() are).
  Result<std::shared_ptr<const TraceReader>> open(const std::string& path);
  // Closes the reader kept for `path` (after a failed read: the next open
  // starts from a fresh view of the file).
  void forget(const std::string& path);
  // Closes the readers kept for files other than `paths` (a directory's listing): a file
  // removed, or no longer one of the job's, holds neither a descriptor nor its disk space.
  void retain(const std::vector<std::string>& paths);

  size_t max_open() const { return max_open_; }
  size_t kept() const { return kept_.size(); }
  uint64_t files_opened() const { return files_opened_; }  // opens so far, kept or not

 private:
  struct Kept {
    FileStamp stamp;  // when last synced (TraceReader::sync)
    std::shared_ptr<const TraceReader> reader;
  };
  size_t max_open_ = 0;
  std::map<std::string, Kept> kept_;
  uint64_t files_opened_ = 0;
};

// `path` through `cache` when there is one, else opened for this use alone.
Result<std::shared_ptr<const TraceReader>> open_trace(const std::string& path,
                                                      TraceReaderCache* cache);
// Likewise, for its op rows alone (TraceReader::open_ops) when there is no cache.
Result<std::shared_ptr<const TraceReader>> open_trace_ops(const std::string& path,
                                                          TraceReaderCache* cache);

// Raises the soft limit of open files to the hard limit; returns the soft
// limit in force afterwards (unchanged when it cannot be raised).
uint64_t raise_open_file_limit();

}  // namespace ringside::trace
