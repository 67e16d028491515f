// Starting the probe's background threads with every signal blocked, so
// that process signals always land on application threads.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <string>
#include <thread>
#include <utility>

namespace ringside::probe {

template <typename F>
bool start_background_thread(F&& body, std::string& error) {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits the mask
  bool ok = true;
  try {
    std::thread(std::forward<F>(body)).detach();
  } catch (const std::exception& e) {
    error = e.what();
    ok = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

}  // namespace ringside::probe
