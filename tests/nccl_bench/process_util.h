// Runs a command line through /bin/sh for the end-to-end tests and captures
// its output and exit status.
#pragma once

#include <sys/types.h>

#include <string>

namespace ringside::bench::testing {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

RunResult run_shell(const std::string& command);

// "env LD_LIBRARY_PATH=<sim> <simrun> -n N --nodes M [--cluster F] -t 300 -- <nccl_bench> args"
std::string sim_command(int ranks, int nodes, const std::string& args,
                        const std::string& cluster = "");
// The same for another program (nccl-tests' names of nccl_bench).
std::string sim_command_for(const std::string& program, int ranks, int nodes,
                            const std::string& args, const std::string& cluster = "");

// Whether the sim libraries and simrun are built (tests skip with a message otherwise).
bool sim_available(std::string* why);

void sleep_seconds(double s);

std::string temp_dir(const std::string& tag);
std::string read_file(const std::string& path);

// A command line running in the background through /bin/sh, in its own
// process group, its output going to files (in a directory removed with it).
struct Background {
  pid_t pid = -1;  // the shell, which execs the command's first program
  std::string dir, out, err;
  Background() = default;
  Background(Background&& o) noexcept;
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background();
};
Background start_background(const std::string& command);
// Waits up to `seconds` for it to end and returns its exit status as
// run_shell does; -1 when it had to be killed (its whole process group).
int wait_background(const Background& b, double seconds);
// Polls `path` every 50 ms until `ready(content)` holds; false after `seconds`.
template <typename Ready>
bool wait_for_file(const std::string& path, double seconds, Ready&& ready);
// The child of `parent` whose environment holds `var=value`, or -1.
pid_t child_with_env(pid_t parent, const std::string& var, const std::string& value);

template <typename Ready>
bool wait_for_file(const std::string& path, double seconds, Ready&& ready) {
  for (double waited = 0; waited < seconds; waited += 0.05) {
    if (ready(read_file(path))) return true;
    sleep_seconds(0.05);
  }
  return ready(read_file(path));
}

}  // namespace ringside::bench::testing
