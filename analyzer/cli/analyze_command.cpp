#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "analyze.h"
#include "cli/commands.h"
#include "report/output_file.h"
#include "ringside/safe_text.h"
#include "report/report_json.h"
#include "report/report_text.h"

namespace ringside::analysis::cli {

CLI::Validator window_ops_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t n = 0;
        if (!CLI::detail::lexical_cast(text, n)) return "not a number of ops: " + text;
        if (n != 0 && (n < kMinWindowOps || n > (uint64_t{1} << 40)))
          return "must be 0 (the whole job) or between " + std::to_string(kMinWindowOps) +
                 " and 2^40 ops per rank: " + text;
        return "";
      },
      "0 or >=" + std::to_string(kMinWindowOps));
}

void write_json_output(const nlohmann::json& j, const std::string& path) {
  const std::string text = json_text(j, 2) + "\n";
  if (path == "-") {
    std::cout << text;
  } else if (Status st = write_output_file(path, text, '{'); !st.ok()) {
    throw InputError("--json " + st.message());
  }
}

void add_analyze_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string dir;
    std::string json;
    std::string html;
    std::string step;
    bool quiet = false;
    bool no_progress = false;
    bool no_spill = false;
    size_t max_findings = 10;
    AnalyzeOptions options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("analyze",
                                     "Analyze a job's trace directory: verdict, culprits, evidence "
                                     "(exit 0 healthy, 1 findings, 2 bad input)");
  cmd->add_option("dir", args->dir,
                  "trace directory (one ringside-<job>[.<step>]-r<rank>.h5 per rank)")
      ->required();
  cmd->add_option(
      "--json", args->json,
      "also write the report as JSON (schema ringside.report/1) to FILE ('-' = stdout)");
  cmd->add_option("--html", args->html,
                  "also write the report as one self-contained HTML file (opens offline)");
  CLI::Option* step =
      cmd->add_option("--step", args->step,
                      "analyze only the traces of this Slurm job step (SLURM_STEP_ID) when the "
                      "directory holds several; 'none': the files without a step id");
  cmd->add_flag("-q,--quiet", args->quiet, "no terminal summary (use with --json)");
  cmd->add_flag("--no-progress", args->no_progress, "never draw the progress bar");
  cmd->add_option("--max-findings", args->max_findings, "findings shown in the summary")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--window-ops", args->options.window_ops,
                  "analyze only each rank's last N ops, cut where every member of an op has it "
                  "(0: the whole job)")
      ->check(window_ops_check())
      ->capture_default_str();
  cmd->add_option("--spill-dir", args->options.spill_dir,
                  "where the first pass keeps each rank's rows for the later ones (about 30 "
                  "bytes per op) and the analysis its per-op table, in unlinked temporary files")
      ->capture_default_str();
  cmd->add_flag("--no-spill", args->no_spill,
                "keep nothing on disk: every pass reads the traces again, and the per-op "
                "table is in memory");
  Thresholds& th = args->options.thresholds;
  cmd->add_option("--min-cost", th.min_cost_fraction,
                  "smallest slowdown reported, as a fraction of the job time")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--hang-wait", th.hang_min_wait_s,
                  "seconds an op must be outstanding at the end to be a hang")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--slow-link-ratio", th.slow_link_ratio,
                  "bandwidth below this fraction of its peers' is slow")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  cmd->callback([args, step, &exit_code] {
    args->options.progress = !args->no_progress;
    if (args->no_spill) args->options.spill_dir.clear();
    if (step->count() > 0) args->options.step = args->step;
    // Under an MPI launcher, one of K processes (parallel/process_group.h): process 0
    // writes everything, the others only read their share of the files.
    std::unique_ptr<ProcessGroup> group;
    if (launched_under_mpi()) {
      try {
        group = open_mpi_process_group();
      } catch (const std::runtime_error& e) {
        throw InputError(e.what());
      }
      args->options.group = group.get();
    }
    auto result = analyze_directory(args->dir, args->options);
    if (group && group->rank() != 0) {
      exit_code = result.ok() ? 0 : 2;
      return;
    }
    if (!result.ok()) throw InputError(result.message());
    const Report& report = result.value();
    for (const auto& w : report.warnings)
      std::cerr << "ringside: warning: " << printable(w) << "\n";
    if (!args->json.empty()) write_json_output(report_to_json(report), args->json);
    if (!args->html.empty()) write_html_report(report_to_json(report), args->html);
    if (!args->quiet && args->json != "-") render_text(report, std::cout, args->max_findings);
    exit_code = analysis::exit_code(report);
  });
}

}  // namespace ringside::analysis::cli
