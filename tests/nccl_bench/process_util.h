// Runs a command line through /bin/sh for the end-to-end tests and captures
// its output and exit status.
#pragma once

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

// Whether the sim libraries and simrun are built (tests skip with a message otherwise).
bool sim_available(std::string* why);

std::string temp_dir(const std::string& tag);
std::string read_file(const std::string& path);

}  // namespace ringside::bench::testing
