// Running real processes from tests: captured output, extra environment,
// a time limit, and signals on demand.
#pragma once

#include <csignal>
#include <string>
#include <vector>

namespace ringside::probe::testing {

struct Exit {
  int status = -1;  // exit code, or 128 + signal
  std::string out;  // stdout
  std::string err;  // stderr
};

class Process {
 public:
  // Starts argv[0] (searched in PATH) with the current environment plus `env` ("NAME=value").
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  ~Process();
  int pid() const { return pid_; }
  void signal(int sig) const;
  // Waits up to `timeout_s`; on timeout SIGKILLs and returns status -1.
  Exit wait(double timeout_s);
  // Whether the process ends within `timeout_s` (it is left to wait() to collect).
  bool exits_within(double timeout_s) const;
  // Current stdout content (while running).
  std::string out_so_far() const;
  // Waits until stdout contains `text`; false after `timeout_s`.
  bool wait_for_output(const std::string& text, double timeout_s) const;

 private:
  int pid_ = -1;
  std::string out_path_;
  std::string err_path_;
};

Exit run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
         double timeout_s = 120);

std::string read_file(const std::string& path);
std::vector<std::string> sorted_lines(const std::string& text);
std::string make_temp_dir(const std::string& tag);

}  // namespace ringside::probe::testing
