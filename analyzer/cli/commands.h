// Subcommands of the `ringside` executable.  Each sets `exit_code` when it
// runs; input errors are thrown as InputError (main maps them to exit 2).
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace ringside::analysis::cli {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void add_analyze_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_watch_command(CLI::App& app, int& exit_code);

}  // namespace ringside::analysis::cli
