#include <iostream>

#include "cli/commands.h"
#include "export/perfetto_export.h"

namespace ringside::analysis::cli {

void add_export_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string dir, perfetto, step;
    double from = 0, to = 0;
    size_t finding = 0;
    ExportOptions options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a job's timeline for Perfetto / chrome://tracing (exit 0 written, 2 bad input)");
  cmd->add_option("dir", args->dir, "trace directory")->required();
  cmd->add_option("--perfetto", args->perfetto,
                  "write the Trace Event Format JSON (ui.perfetto.dev opens it) to FILE")
      ->required();
  CLI::Option* from = cmd->add_option("--from", args->from,
                                      "only ops that end after this many seconds of the job "
                                      "(0: the job's first op)")
                          ->check(CLI::Range(-1e9, 1e9));
  CLI::Option* to =
      cmd->add_option("--to", args->to, "only ops that begin before this many seconds of the job")
          ->check(CLI::Range(-1e9, 1e9));
  CLI::Option* around =
      cmd->add_option("--around-finding", args->finding,
                      "only the --span seconds around the op of finding N of the report "
                      "(numbered from 1, as `ringside analyze` lists them; hangs and desyncs)")
          ->check(CLI::Range(size_t{1}, size_t{1000000}))
          ->excludes(from)
          ->excludes(to);
  cmd->add_option("--span", args->options.span_s, "seconds shown with --around-finding")
      ->check(CLI::Range(1e-6, 1e9))
      ->needs(around)
      ->capture_default_str();
  CLI::Option* step = cmd->add_option(
      "--step", args->step, "the traces of this Slurm job step (as `ringside analyze --step`)");
  cmd->callback([args, from, to, around, step, &exit_code] {
    ExportOptions& o = args->options;
    if (from->count() > 0) o.from_s = args->from;
    if (to->count() > 0) o.to_s = args->to;
    if (around->count() > 0) o.around_finding = args->finding;
    if (step->count() > 0) o.step = args->step;
    auto done = export_perfetto(args->dir, args->perfetto, o);
    if (!done.ok()) throw InputError(done.message());
    const ExportSummary& s = done.value();
    std::cout << "export: wrote " << args->perfetto << ": " << s.slices << " op slices, "
              << s.counters << " counter values, " << s.findings << " findings, seconds "
              << s.from_s << " to " << s.to_s << " of the job\n";
    exit_code = 0;
  });
}

}  // namespace ringside::analysis::cli
