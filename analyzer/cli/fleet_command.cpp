// `ringside fleet REPORTS...`: which nodes, GPUs and links keep being the
// culprit across jobs, joined with Slurm accounting.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fleet/accounting.h"
#include "fleet/fleet.h"
#include "fleet/fleet_output.h"
#include "report/input_file.h"

namespace ringside::analysis::cli {

void add_fleet_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::vector<std::string> reports;
    std::string sacct_file;
    std::string sacct = "sacct";
    bool no_sacct = false;
    std::string json;
    bool quiet = false;
    int64_t drain_after = 2;
    size_t top = 10;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "fleet",
      "Across many jobs' reports: the nodes, GPUs and links that keep being the culprit, "
      "what they cost in GPU-hours, and how the jobs used their GPUs (exit 0, or 1 when a "
      "node should be drained, 2 bad input)");
  cmd->add_option("reports", a->reports,
                  "report JSON files (ringside analyze/watch --json), or directories searched "
                  "for them")
      ->required();
  cmd->add_option("--sacct", a->sacct_file,
                  "Slurm accounting from a saved dump (`sacct -P --format=...` with its header "
                  "line, or `sacct --json`) instead of running sacct");
  cmd->add_option("--sacct-command", a->sacct,
                  "the sacct program run with the reports' job ids when --sacct is not given")
      ->capture_default_str();
  cmd->add_flag("--no-sacct", a->no_sacct, "no Slurm accounting (GPUs and times from the reports)");
  cmd->add_option("--json", a->json,
                  "also write the fleet view as JSON (schema ringside.fleet/1) to FILE ('-' = "
                  "stdout)");
  cmd->add_flag("-q,--quiet", a->quiet, "no terminal summary (use with --json)");
  cmd->add_option("--drain-after", a->drain_after,
                  "recommend draining a node blamed in at least this many jobs")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}))
      ->capture_default_str();
  cmd->add_option("--top", a->top, "culprits shown in the summary")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->capture_default_str();
  cmd->callback([a, &exit_code] {
    using namespace fleet;
    if (!a->sacct_file.empty() && a->no_sacct)
      throw InputError("--sacct and --no-sacct exclude each other");
    std::vector<JobRun> runs;
    std::vector<std::string> warnings;
    if (Status s = load_reports(a->reports, &runs, &warnings); !s.ok())
      throw InputError(s.message());
    if (runs.empty()) throw InputError("no ringside report found in the given paths");
    std::map<std::string, SacctJob> acct;
    if (!a->sacct_file.empty()) {
      const auto text = read_input_file(a->sacct_file);
      if (!text) throw InputError("--sacct " + a->sacct_file + ": cannot be read");
      if (Status s = parse_sacct(*text, a->sacct_file, &acct); !s.ok())
        throw InputError("--sacct " + s.message());
    } else if (!a->no_sacct) {
      std::vector<std::string> ids;
      for (const JobRun& r : runs) ids.push_back(r.job);
      if (Status s = run_sacct(a->sacct, ids, &acct); !s.ok())
        warnings.push_back("no Slurm accounting: " + s.message());
    }
    int64_t joined = 0;
    for (JobRun& r : runs) {
      if (auto it = acct.find(r.job); it != acct.end()) {
        r.sacct = it->second;
        ++joined;
      }
    }
    if (!acct.empty() || !a->sacct_file.empty()) {
      if (joined < static_cast<int64_t>(runs.size()))
        warnings.push_back(std::to_string(static_cast<int64_t>(runs.size()) - joined) + " of " +
                           std::to_string(runs.size()) +
                           " jobs have no accounting record (GPUs and times from their reports)");
    }
    FleetSummary s = summarize_fleet(std::move(runs), a->drain_after);
    s.warnings = std::move(warnings);
    if (!a->json.empty()) write_json_output(fleet_json(s), a->json);
    if (!a->quiet && a->json != "-") render_fleet_text(s, a->top, std::cout);
    exit_code = 0;
    for (const Culprit& c : s.culprits) exit_code |= c.drain ? 1 : 0;
  });
}

}  // namespace ringside::analysis::cli
