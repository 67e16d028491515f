#include "fresh_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>

namespace ringside::trace {
namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// "dir/" and "name" of a path ("" and the path when it has no slash).
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

// Distinct on every call within a process; the pid and the clock make
// collisions between processes unlikely, and O_EXCL makes them harmless.
std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char buf[64];
  std::snprintf(buf, sizeof buf, ".tmp-%ld-%u-%lx", static_cast<long>(getpid()),
                counter.fetch_add(1, std::memory_order_relaxed),
                static_cast<unsigned long>(ts.tv_nsec));
  return buf;
}

}  // namespace

FreshFile::FreshFile(std::string final_path, std::string temp_path, int fd)
    : final_path_(std::move(final_path)), temp_path_(std::move(temp_path)), fd_(fd) {}

FreshFile::FreshFile(FreshFile&& other) noexcept
    : final_path_(std::move(other.final_path_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(other.fd_),
      published_(other.published_) {
  other.fd_ = -1;
  other.published_ = true;  // the moved-from object owns nothing to clean up
}

FreshFile::~FreshFile() {
  if (!published_ && !temp_path_.empty()) unlink(temp_path_.c_str());
  if (fd_ >= 0) close(fd_);
}

Result<FreshFile> FreshFile::create(const std::string& final_path) {
  const auto [dir, name] = split_path(final_path);
  if (name.empty()) return Status::error(final_path + ": not a file name");
  constexpr int kAttempts = 16;
  int err = 0;
  for (int i = 0; i < kAttempts; ++i) {
    std::string temp = dir + "." + name + unique_suffix();
    const int fd = open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        S_IRUSR | S_IWUSR | S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH);
    if (fd >= 0) return FreshFile(final_path, std::move(temp), fd);
    err = errno;
    if (err != EEXIST) break;
  }
  return Status::error("cannot create a file in '" + (dir.empty() ? std::string(".") : dir) +
                       "' for " + final_path + ": " + errno_text(err));
}

std::string FreshFile::open_name() const {
  return "/proc/self/fd/" + std::to_string(fd_);
}

Status FreshFile::check_same_file(int fd) const {
  struct stat ours {};
  struct stat theirs {};
  if (fstat(fd_, &ours) != 0 || fstat(fd, &theirs) != 0) {
    const int err = errno;
    return Status::error(final_path_ + ": cannot check the created file: " + errno_text(err));
  }
  if (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino) {
    return Status::error(final_path_ +
                         ": HDF5 opened a different file than the one created (is /proc "
                         "mounted?)");
  }
  return {};
}

Status FreshFile::publish() {
  if (published_) return {};
  if (rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    const int err = errno;
    return Status::error(
        "cannot put the trace at " + final_path_ + ": " + errno_text(err) +
        (err == EISDIR || err == ENOTEMPTY || err == EEXIST ? " (a directory has that name)" : ""));
  }
  published_ = true;
  close(fd_);
  fd_ = -1;
  return {};
}

}  // namespace ringside::trace
