#include <iostream>

#include "cli/commands.h"
#include "diff/diff_input.h"
#include "diff/run_diff.h"
#include "ringside/safe_text.h"

namespace ringside::analysis::cli {

void add_diff_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string a, b, json;
    bool quiet = false;
    DiffOptions options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two runs of the same job shape (trace directories or report JSONs): what got "
      "better or worse beyond noise (exit 0 no regression, 1 B regressed, 2 bad input)");
  cmd->add_option("A", args->a, "the run before: trace directory or `analyze --json` report")
      ->required();
  cmd->add_option("B", args->b, "the run after: trace directory or `analyze --json` report")
      ->required();
  cmd->add_option("--json", args->json,
                  "also write the comparison as JSON (schema ringside.diff/1) to FILE ('-' = "
                  "stdout)");
  cmd->add_option("--threshold", args->options.threshold,
                  "B regressed when something got worse beyond noise by more than this "
                  "fraction (step time, bus bandwidth, clocks: of A's value; lateness: of the "
                  "peers' compute per op; throttling: of the samples)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--max-listed", args->options.max_listed, "changes listed per area and direction")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", args->quiet, "no text summary (use with --json)");
  cmd->callback([args, &exit_code] {
    auto a = load_diff_input(args->a);
    if (!a.ok()) throw InputError("A: " + a.message());
    auto b = load_diff_input(args->b);
    if (!b.ok()) throw InputError("B: " + b.message());
    auto diff = diff_reports(a.value(), b.value(), args->options);
    if (!diff.ok()) throw InputError(diff.message());
    DiffResult& d = diff.value();
    d.a.source = args->a;
    d.b.source = args->b;
    if (!args->json.empty()) write_json_output(diff_to_json(d), args->json);
    // Names come from the reports, which may be any JSON: printable on a terminal.
    if (!args->quiet && args->json != "-") std::cout << printable(diff_to_text(d), true);
    exit_code = d.regressed() ? 1 : 0;
  });
}

}  // namespace ringside::analysis::cli
