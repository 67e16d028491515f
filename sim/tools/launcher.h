// Spawns the ranks of one local job, forwards signals, enforces the time
// limit and collects exit statuses.
#pragma once

#include <string>
#include <vector>

namespace ringside::sim {

struct LaunchOptions {
  int ranks = 1;
  int nodes = 1;
  std::string cluster_file;  // absolute path or empty
  double timeout_s = 0;      // 0 = no time limit
  double kill_after_s = 5;   // SIGTERM -> SIGKILL grace period
  bool kill_on_bad_exit = false;
  std::vector<std::string> command;  // program and its arguments
};

// Thrown for problems the user can fix (program not found, no free port).
struct LaunchError {
  std::string message;
};

// Runs the job to completion and returns simrun's exit status: the first
// non-zero rank status in the order ranks ended (128 + signal for a rank killed
// by a signal), or 0 when every rank exited 0; 128 + SIGTERM when the time
// limit struck even if every rank then exited 0.
int run_job(const LaunchOptions& options);

// Resolves `program` like execvp would (PATH search when it has no '/').
// Returns the path or throws LaunchError naming the program.
std::string resolve_program(const std::string& program);

// A TCP port on 127.0.0.1 that was free a moment ago, chosen at random below
// the kernel's ephemeral port range so that no outgoing connection takes it
// before it is listened on (any free port when that range leaves no room).
int find_free_port();

}  // namespace ringside::sim
