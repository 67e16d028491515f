#include "load/file_identity.h"

#include <sys/stat.h>

namespace ringside::analysis {

Result<FileIdentity> file_identity(const std::string& path, const trace::TraceMeta& meta) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::error(path + ": no such file");
  FileIdentity id;
  id.dev = static_cast<uint64_t>(st.st_dev);
  id.ino = static_cast<uint64_t>(st.st_ino);
  id.clock_realtime_ns = meta.clock_realtime_ns;
  id.clock_monotonic_ns = meta.clock_monotonic_ns;
  id.pid = meta.pid;
  return id;
}

}  // namespace ringside::analysis
