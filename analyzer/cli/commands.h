// Subcommands of the `ringside` executable.  Each sets `exit_code` when it
// runs; input errors are thrown as InputError (main maps them to exit 2).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <stdexcept>

namespace ringside::analysis::cli {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// --window-ops N: 0 (the whole job) or at least kMinWindowOps (fewer ops per
// rank leave the tests too few ops to tell noise from a fault).
inline constexpr uint64_t kMinWindowOps = 500;
CLI::Validator window_ops_check();

void add_analyze_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_watch_command(CLI::App& app, int& exit_code);
void add_diff_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);

}  // namespace ringside::analysis::cli
