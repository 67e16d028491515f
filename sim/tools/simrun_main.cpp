// simrun: launches N ranks of a program on this machine, with the environment
// a torchrun-style launcher would give them plus the sim's node identity.
// See docs/simrun.md.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher.h"
#include "ringside/config_spec.h"
#include "ringside/version.h"

namespace {

constexpr int kUsageError = 2;
constexpr int kMaxRanks = 1024;

const char* const kFooter = R"(
Each rank gets: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
NCCL_COMM_ID=127.0.0.1:<free port>, RINGSIM_NODE=node<k> and
RINGSIDE_NODE_NAME=node<k> (k = 1..K; ranks in contiguous blocks, the first
N % K nodes get one extra rank), RINGSIDE_JOB_ID (kept if already set, else
generated and shared by the ranks) and RINGSIM_CLUSTER=<abs path> with
--cluster (otherwise inherited). Rank output is not touched; stdin is /dev/null.

SIGINT/SIGTERM are forwarded to the ranks; they get --kill-after seconds to exit
before SIGKILL. --timeout works like a Slurm time limit: SIGTERM, then SIGKILL.
Exit status: the first non-zero rank status (128+signal for a signal), else 0;
2 for a usage error.

Example: simrun -n 8 --nodes 2 --cluster examples/scenarios/healthy.json -- build/bin/train_example)";

// Seconds with an optional unit (500ms, 2s, 1m), validated fully.
double parse_duration(const std::string& flag, const std::string& text) {
  auto parsed = ringside::config::parse_seconds(text);
  if (!parsed.ok()) {
    throw CLI::ValidationError(flag, parsed.message() + " (use e.g. 30, 30s, 500ms or 2m)");
  }
  if (*parsed < 0) throw CLI::ValidationError(flag, "'" + text + "' is negative");
  return *parsed;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the program and its arguments, never
  // simrun's flags.
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  }

  CLI::App app{
      "simrun: launch N ranks of PROGRAM on this machine (the sim's local launcher)\n"
      "usage: simrun -n N [--nodes K] [--cluster FILE] [--timeout SEC] [--kill-after SEC] -- "
      "PROGRAM [ARGS...]",
      "simrun"};
  app.footer(kFooter);
  app.set_version_flag("--version", ringside::version_text("simrun"));
  ringside::sim::LaunchOptions options;
  std::string timeout_text = "0";
  std::string kill_after_text = "5";
  app.add_option("-n,--ntasks", options.ranks, "number of ranks to launch")
      ->required()
      ->check(CLI::Range(1, kMaxRanks));
  app.add_option("-N,--nodes", options.nodes, "number of simulated nodes (default 1)")
      ->check(CLI::Range(1, kMaxRanks));
  app.add_option("--cluster", options.cluster_file,
                 "sim cluster file (JSON), exported as RINGSIM_CLUSTER")
      ->check(CLI::ExistingFile);
  app.add_option("-t,--timeout", timeout_text,
                 "time limit for the whole job (30, 30s, 500ms, 2m; 0 = none)");
  app.add_option("--kill-after", kill_after_text,
                 "seconds between SIGTERM and SIGKILL on timeout or signal (default 5)");
  app.add_flag("-K,--kill-on-bad-exit", options.kill_on_bad_exit,
               "terminate every rank as soon as one exits non-zero (like srun -K)");

  try {
    app.parse(split, argv);
    options.timeout_s = parse_duration("--timeout", timeout_text);
    options.kill_after_s = parse_duration("--kill-after", kill_after_text);
    if (options.nodes > options.ranks) {
      throw CLI::ValidationError(
          "--nodes", std::to_string(options.nodes) + " nodes for " + std::to_string(options.ranks) +
                         " ranks: every node needs a rank; use --nodes <= -n");
    }
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    std::fprintf(
        stderr,
        "simrun: error: %s\nsimrun takes no positional arguments: put '--' between simrun's "
        "flags and the program; see 'simrun --help' for the flags.\n",
        e.what());
    return kUsageError;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "simrun: error: %s\nRun 'simrun --help' for usage.\n", e.what());
    return kUsageError;
  }

  if (split + 1 >= argc) {
    std::fprintf(
        stderr,
        "simrun: error: no program given; usage: simrun -n N [flags] -- PROGRAM [ARGS...]\n");
    return kUsageError;
  }
  for (int i = split + 1; i < argc; ++i) options.command.emplace_back(argv[i]);
  if (!options.cluster_file.empty()) {
    options.cluster_file = std::filesystem::absolute(options.cluster_file).string();
  }

  try {
    return ringside::sim::run_job(options);
  } catch (const ringside::sim::LaunchError& e) {
    std::fprintf(stderr, "simrun: error: %s\n", e.message.c_str());
    return kUsageError;
  }
}
