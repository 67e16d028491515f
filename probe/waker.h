// Wakes a sleeping background thread; wake() is async-signal-safe (eventfd).
#pragma once

#include <cstdint>

namespace ringside::probe {

class Waker {
 public:
  Waker();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  void wake();
  // Sleeps until woken or `timeout_ns` passed; returns true when woken.
  bool wait(int64_t timeout_ns);

 private:
  int fd_ = -1;
};

}  // namespace ringside::probe
