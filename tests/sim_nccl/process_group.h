// Runs N copies of a program as separate processes (one per rank) with per-rank
// environment, captures their output, and waits up to a deadline; processes still
// running then are reported as such and killed.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ringside::test {

struct RankResult {
  bool finished = false;  // false: still running at the deadline (then killed)
  bool exited = false;    // finished with exit() (else by a signal)
  int exit_code = -1;     // when exited normally
  int signal = 0;         // when killed by a signal before the deadline
  std::string out, err;
};

struct LaunchSpec {
  std::vector<std::string> argv;
  int nranks = 1;
  double timeout_s = 60;
  std::map<std::string, std::string> env;                    // for every rank
  std::vector<std::map<std::string, std::string>> rank_env;  // per rank (optional)
  bool comm_id = true;  // set NCCL_COMM_ID=127.0.0.1:<free port>
};

std::vector<RankResult> run_ranks(const LaunchSpec& spec);

std::string describe(const std::vector<RankResult>& results);

}  // namespace ringside::test
