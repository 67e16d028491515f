#include "report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ringside::analysis {
namespace {

constexpr char kHdf5Signature[] = "\x89HDF\r\n\x1a\n";

std::string reason(int err) {
  return std::strerror(err);
}

// Why `path`, which exists, must not be replaced; empty if it may.
std::string refuse_reason(const std::string& path, const struct stat& st, char first_char) {
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (st.st_size == 0) return "";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "it cannot be read to check what it is (" + reason(errno) + ")";
  char head[8] = {};
  const ssize_t n = read(fd, head, sizeof head);
  close(fd);
  if (n == static_cast<ssize_t>(sizeof head) && std::memcmp(head, kHdf5Signature, 8) == 0)
    return "it is an HDF5 file (a trace?)";
  size_t i = 0;
  while (i < static_cast<size_t>(std::max<ssize_t>(n, 0)) &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\t' || head[i] == '\r'))
    ++i;
  if (n <= 0 || static_cast<ssize_t>(i) == n) return "";
  if (head[i] != first_char)
    return std::string("it exists and is not an earlier report (does not start with '") +
           first_char + "')";
  return "";
}

}  // namespace

Status write_output_file(const std::string& path, const std::string& text, char first_char) {
  if (path.empty()) return Status::error("empty output path");
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    const std::string why = refuse_reason(path, st, first_char);
    if (!why.empty()) return Status::error(path + ": not overwritten: " + why);
  } else if (errno != ENOENT) {
    return Status::error(path + ": cannot write: " + reason(errno));
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string tmp = dir + (slash == std::string::npos ? "/" : "") + ".ringside-out.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return Status::error(path + ": cannot write in " + dir + ": " + reason(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      close(fd);
      unlink(tmp.c_str());
      return Status::error(path + ": cannot write: " + reason(err));
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp makes the file 0600; a report is as readable as any file the user creates.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Status::error(path + ": cannot write: " + reason(err));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return Status::error(path + ": cannot write: " + reason(err));
  }
  return {};
}

}  // namespace ringside::analysis
