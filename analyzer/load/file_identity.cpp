#include "load/file_identity.h"

namespace ringside::analysis {

FileIdentity file_identity(const trace::TraceReader& reader) {
  const trace::FileStamp& stamp = reader.stamp();
  const trace::TraceMeta& meta = reader.meta();
  FileIdentity id;
  id.dev = stamp.dev;
  id.ino = stamp.ino;
  id.btime_ns = stamp.btime_ns;
  id.clock_realtime_ns = meta.clock_realtime_ns;
  id.clock_monotonic_ns = meta.clock_monotonic_ns;
  id.pid = meta.pid;
  return id;
}

}  // namespace ringside::analysis
