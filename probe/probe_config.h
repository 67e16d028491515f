// The probe's RINGSIDE_* options: one spec table drives parsing, validation,
// RINGSIDE_DUMP_CONFIG, `ringside run --help` and docs/probe.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringside/config_spec.h"

namespace ringside::probe {

// Every RINGSIDE_* variable the probe (and `ringside run`) understands.
std::span<const config::OptionSpec> option_specs();

// Effective configuration after parsing; bad values are at their defaults.
struct ProbeConfig {
  bool enable = true;
  std::string output_dir = "ringside-traces";
  bool device_timing = true;
  double sample_hz = 2.0;
  bool xid_events = true;
  double flush_interval_s = 1.0;
  double watchdog_timeout_s = 300.0;
  double shutdown_timeout_s = 10.0;
  uint64_t ring_size = 8192;
  std::string node_name;  // RINGSIDE_NODE_NAME, empty when unset
  std::string job_id;     // RINGSIDE_JOB_ID, empty when unset
  bool dump_config = false;
  std::string json;  // effective configuration as JSON, for the trace
  std::string dump;  // "NAME=value (default|set)" lines
};

struct ConfigResult {
  ProbeConfig config;
  std::vector<std::string> errors;  // one line per bad value or unknown RINGSIDE_* name
};

// Reads RINGSIDE_* from `env` (a NULL-terminated environ array).  Never throws.
ConfigResult load_config(char** env);

}  // namespace ringside::probe
