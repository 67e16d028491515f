// `ringside run`: runs a command with the probe preloaded, mapping flags onto
// RINGSIDE_* variables.  Registered on the `ringside` CLI by analyzer/cli.
#pragma once

#include <CLI/CLI.hpp>

namespace ringside::launcher {

// Adds the `run` subcommand to `app`.  When it is chosen, its callback execs
// the command (never returns on success) or throws CLI::Error-derived
// exceptions / std::runtime_error for main to map to exit code 2.
void add_run_command(CLI::App& app);

}  // namespace ringside::launcher
