// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ringside::analysis {

class Progress {
 public:
  // enabled=false never draws; use Progress::for_stderr() for the tty check.
  explicit Progress(bool enabled) : enabled_(enabled) {}
  static Progress for_stderr();
  ~Progress() { finish(); }

  void update(const std::string& phase, uint64_t done, uint64_t total);
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ringside::analysis
