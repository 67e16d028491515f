// Which file a trace reader reads, for caches kept between `ringside watch` polls:
// its device, inode and creation time (ringside/file_stamp.h), and its writer's
// clock reference and pid (a file created after another was removed may get the
// removed one's inode, and not every file system records creation times).
#pragma once

#include <cstdint>

#include "ringside/trace_reader.h"

namespace ringside::analysis {

struct FileIdentity {
  uint64_t dev = 0, ino = 0;
  int64_t btime_ns = 0;  // 0: not recorded by the file system
  int64_t clock_realtime_ns = 0, clock_monotonic_ns = 0, pid = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The file `reader` has open, as stamped when it was opened: no file system call.
FileIdentity file_identity(const trace::TraceReader& reader);

}  // namespace ringside::analysis
