#include "load/file_identity.h"

#include "ringside/file_stamp.h"

namespace ringside::analysis {

Result<FileIdentity> file_identity(const std::string& path, const trace::TraceMeta& meta) {
  auto stamp = trace::file_stamp(path);
  if (!stamp.ok()) return stamp.status();
  FileIdentity id;
  id.dev = stamp->dev;
  id.ino = stamp->ino;
  id.btime_ns = stamp->btime_ns;
  id.clock_realtime_ns = meta.clock_realtime_ns;
  id.clock_monotonic_ns = meta.clock_monotonic_ns;
  id.pid = meta.pid;
  return id;
}

}  // namespace ringside::analysis
