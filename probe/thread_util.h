// Starting the probe's background threads with every signal blocked, so
// that process signals always land on application threads, and named
// (`top -H`, gdb) so that users can tell them from their own.  Their CPU time is
// counted as the probe's (host_cpu.h).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <string>
#include <thread>
#include <utility>

#include "host_cpu.h"

namespace ringside::probe {

// `name`: at most 15 characters, e.g. "ringside-writer".
template <typename F>
bool start_background_thread(const char* name, F&& body, std::string& error) {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the mask
  bool ok = true;
  try {
    std::thread t([body = std::forward<F>(body)]() mutable {
      own_thread_started();
      body();
      own_thread_ending();
    });
    pthread_setname_np(t.native_handle(), name);
    t.detach();
  } catch (const std::exception& e) {
    error = e.what();
    ok = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

}  // namespace ringside::probe
