#include "ringside/file_stamp.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace ringside::trace {
namespace {

int64_t ns_of(const statx_timestamp& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

Result<FileStamp> file_stamp(const std::string& path) {
  struct statx st {};
  // Network file systems cache attributes (NFS for up to a minute): ask the server,
  // or a file written since would look unchanged.  Local file systems ignore it.
  constexpr unsigned kWanted = STATX_BASIC_STATS | STATX_BTIME;
  if (::statx(AT_FDCWD, path.c_str(), AT_STATX_FORCE_SYNC, kWanted, &st) != 0) {
    const int err = errno;
    return Status::error(path + ": cannot be examined: " + std::strerror(err));
  }
  FileStamp s;
  s.dev = (static_cast<uint64_t>(st.stx_dev_major) << 32) | st.stx_dev_minor;
  s.ino = st.stx_ino;
  s.size = st.stx_size;
  s.mtime_ns = ns_of(st.stx_mtime);
  s.ctime_ns = ns_of(st.stx_ctime);
  s.btime_ns = (st.stx_mask & STATX_BTIME) != 0 ? ns_of(st.stx_btime) : 0;
  s.regular = S_ISREG(st.stx_mode);
  return s;
}

bool same_file(const FileStamp& before, const FileStamp& now) {
  if (before.dev != now.dev || before.ino != now.ino) return false;
  if (before.btime_ns != 0 && now.btime_ns != 0) return before.btime_ns == now.btime_ns;
  return now.size >= before.size;
}

}  // namespace ringside::trace
