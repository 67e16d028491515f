// Runs a real child process for the example tests: arguments, extra
// environment, captured stdout/stderr, and a safety limit so a broken test
// cannot hang ctest.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace ringside::testing {

struct ProcessResult {
  int exit_code = -1;      // exit status, or 128 + signal
  bool limit_hit = false;  // the safety limit killed it
  std::string out;
  std::string err;
  std::string describe() const;  // for failure messages
};

class Process {
 public:
  // Starts argv[0] (a path) with the current environment plus `env` (NAME=value).
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Waits up to `limit_s` seconds, then SIGKILLs the child's process group.
  ProcessResult wait(double limit_s);

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  bool done_ = false;
};

ProcessResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                  double limit_s = 120);

// Lines of `text` that contain `needle`.
int count_lines_with(const std::string& text, const std::string& needle);

}  // namespace ringside::testing
