#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "watch/watch.h"

namespace ringside::analysis::cli {

void add_watch_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<watch::WatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Follow a running job's trace directory and report findings as they appear; ends when "
      "every trace is closed (exit codes as analyze)");
  cmd->add_option("dir", o->dir, "trace directory the job's probes write into")->required();
  cmd->add_option("--poll", o->poll_s, "seconds between polls")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_option("--until", o->until_s, "stop after this many seconds (0 = when the job ends)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--events", o->events,
                  "append one JSON line per new or cleared finding to FILE ('-' = stdout)");
  cmd->add_option("--prom", o->prom,
                  "write Prometheus text-format metrics to FILE after every poll (atomically)");
  cmd->add_option("--on-finding", o->on_finding,
                  "run this shell command once per new finding (details in RINGSIDE_FINDING_* "
                  "environment variables); never waited for by the watch loop");
  cmd->add_option("--on-finding-timeout", o->on_finding_timeout_s,
                  "seconds before an --on-finding command is killed")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write the final report as JSON to FILE");
  cmd->add_flag("-q,--quiet", o->quiet, "no status line per poll");
  auto open_files = std::make_shared<size_t>(0);
  CLI::Option* open_files_opt =
      cmd->add_option("--open-files", *open_files,
                      "trace files kept open between polls (each costs a descriptor and ~1.1 "
                      "MB and saves opening it again: a quarter of a poll's CPU at 1024 ranks; "
                      "the others are opened at every poll); default: the open-file limit, "
                      "raised to its hard limit, less 64; 0: none")
          ->check(CLI::Range(size_t{0}, size_t{1} << 24));
  auto step = std::make_shared<std::string>();
  CLI::Option* step_opt =
      cmd->add_option("--step", *step,
                      "follow only the traces of this Slurm job step (SLURM_STEP_ID) when the "
                      "directory holds several; 'none': the files without a step id");
  cmd->add_option("--window-ops", o->analyze.window_ops,
                  "each poll analyzes each rank's last N ops (what a poll reads and holds does "
                  "not grow with the job); 0: the whole job at every poll")
      ->check(window_ops_check())
      ->capture_default_str();
  cmd->add_option("--hang-wait", o->analyze.thresholds.hang_min_wait_s,
                  "seconds an op must be outstanding to be a hang")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->callback([o, step, step_opt, open_files, open_files_opt, &exit_code] {
    if (step_opt->count() > 0) o->analyze.step = *step;
    if (open_files_opt->count() > 0) o->open_files = *open_files;
    exit_code = watch::run_watch(*o, std::cout, std::cerr);
  });
}

}  // namespace ringside::analysis::cli
