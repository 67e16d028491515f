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

Result<OutputFile> OutputFile::open(const std::string& path, char first_char) {
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
  OutputFile out;
  out.path_ = path;
  out.temp_ = tmp;
  out.fd_ = fd;
  return out;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)),
      temp_(std::move(o.temp_)),
      buffer_(std::move(o.buffer_)),
      fd_(o.fd_) {
  o.fd_ = -1;
}

OutputFile::~OutputFile() {
  if (fd_ < 0) return;
  close(fd_);
  unlink(temp_.c_str());
}

Status OutputFile::write(std::string_view text) {
  buffer_.append(text);
  return buffer_.size() >= kFlushBytes ? flush() : Status{};
}

Status OutputFile::flush() {
  if (fd_ < 0) return Status::error(path_ + ": written after it was closed");
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::error(path_ + ": cannot write: " + reason(n < 0 ? errno : ENOSPC));
    done += static_cast<size_t>(n);
  }
  buffer_.clear();
  return {};
}

Status OutputFile::commit() {
  if (Status s = flush(); !s.ok()) return s;
  // mkstemp makes the file 0600; a report is as readable as any file the user creates.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
  const int rc = close(fd_);
  fd_ = -1;
  if (rc != 0) {
    const int err = errno;
    unlink(temp_.c_str());
    return Status::error(path_ + ": cannot write: " + reason(err));
  }
  if (rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    unlink(temp_.c_str());
    return Status::error(path_ + ": cannot write: " + reason(err));
  }
  return {};
}

Status write_output_file(const std::string& path, const std::string& text, char first_char) {
  auto out = OutputFile::open(path, first_char);
  if (!out.ok()) return out.status();
  if (Status s = out.value().write(text); !s.ok()) return s;
  return out.value().commit();
}

}  // namespace ringside::analysis
