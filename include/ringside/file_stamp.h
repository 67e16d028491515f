// What stat(2) tells about a trace file, for readers that keep state about a
// file between polls of a directory (`ringside watch`): which file a name
// refers to, and whether it changed since it was last seen.
//
// Device and inode alone do not name a file for good: once a file is removed
// and closed, a new file may get its inode.  The creation time (statx) tells
// them apart where the file system records it.  Elsewhere a file smaller than
// the one seen before under that name is taken for another: trace files grow
// while written (a writer that closes its file may shrink it a little, as HDF5
// releases space it had reserved at the end: then the file is opened anew,
// which costs an open, never data).
#pragma once

#include <cstdint>
#include <string>

#include "ringside/status.h"

namespace ringside::trace {

struct FileStamp {
  uint64_t dev = 0, ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // last data change
  int64_t ctime_ns = 0;  // last data or metadata change (cannot be set back by utime)
  int64_t btime_ns = 0;  // creation; 0 where the file system does not record it
  bool regular = false;  // a regular file (not a directory, device or pipe)
  // Equal stamps: the same file, unchanged as far as stat can tell.
  bool operator==(const FileStamp&) const = default;
};

// Asks the file server where there is one (attributes cached by a network file
// system client could be stale).  Errors: the path cannot be examined (missing,
// permission), named with the cause.
Result<FileStamp> file_stamp(const std::string& path);

// Whether `now` may be the file `before` was taken of, grown or not: same device
// and inode, and the same creation time where both know it, else no smaller.
bool same_file(const FileStamp& before, const FileStamp& now);

}  // namespace ringside::trace
