#include "waker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace ringside::probe {

Waker::Waker() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Waker::~Waker() {
  if (fd_ >= 0) close(fd_);
}

void Waker::wake() {
  const int saved = errno;
  if (fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
  }
  errno = saved;
}

bool Waker::wait(int64_t timeout_ns) {
  if (timeout_ns < 0) timeout_ns = 0;
  if (fd_ < 0) {  // no eventfd: plain sleep
    timespec ts{static_cast<time_t>(timeout_ns / 1000000000),
                static_cast<long>(timeout_ns % 1000000000)};
    nanosleep(&ts, nullptr);
    return false;
  }
  pollfd p{fd_, POLLIN, 0};
  const int ms = static_cast<int>((timeout_ns + 999999) / 1000000);
  const int rc = poll(&p, 1, ms);
  if (rc > 0) {
    uint64_t v = 0;
    [[maybe_unused]] ssize_t n = read(fd_, &v, sizeof v);
    return true;
  }
  return false;
}

}  // namespace ringside::probe
