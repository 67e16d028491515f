// Subcommands of the `ringside` executable.  Each sets `exit_code` when it
// runs; input errors are thrown as InputError (main maps them to exit 2).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

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
void add_fleet_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);

// --json PATH: `j` indented to stdout for '-', else to the file (never replacing
// anything but an earlier JSON output); InputError if it cannot.
void write_json_output(const nlohmann::json& j, const std::string& path);

// Writes the HTML report of `report` (a report JSON) to `path`; InputError if it cannot.
void write_html_report(const nlohmann::json& report, const std::string& path);
void add_diff_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);

}  // namespace ringside::analysis::cli
