#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace ringside::analysis {

Progress Progress::for_stderr() {
  return Progress(::isatty(STDERR_FILENO) == 1);
}

void Progress::update(const std::string& phase, uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  auto now = std::chrono::steady_clock::now();
  // Redrawing costs a write per call; 10 Hz is enough for a person.
  if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(kWidth * done / total);
  std::fprintf(stderr, "\r%-22s [", phase.c_str());
  for (int i = 0; i < kWidth; ++i) std::fputc(i < filled ? '#' : '.', stderr);
  std::fprintf(stderr, "] %llu/%llu", static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total));
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace ringside::analysis
