#include "probe_config.h"

#include <array>

namespace ringside::probe {

namespace {

using config::OptionSpec;
using config::Type;

// Order is the order of docs/probe.md and RINGSIDE_DUMP_CONFIG.
const std::array kSpecs = {
    OptionSpec{"RINGSIDE_ENABLE", Type::kBool, "1",
               "0 turns the probe into a pure pass-through: no trace, no threads"},
    OptionSpec{"RINGSIDE_OUTPUT", Type::kString, "ringside-traces",
               "directory for the per-rank trace files (created if missing)"},
    OptionSpec{"RINGSIDE_DEVICE_TIMING", Type::kBool, "1",
               "record CUDA events around each op for device start/end times"},
    OptionSpec{"RINGSIDE_SAMPLE_HZ", Type::kDouble, "2",
               "GPU counter sampling rate through NVML, 0 turns sampling off", 0, 10},
    OptionSpec{"RINGSIDE_XID_EVENTS", Type::kBool, "1", "record NVML XID events as they arrive"},
    OptionSpec{"RINGSIDE_FLUSH_INTERVAL", Type::kSeconds, "1s",
               "how often completed and outstanding ops are made durable", 0.05, 3600},
    OptionSpec{"RINGSIDE_WATCHDOG_TIMEOUT", Type::kSeconds, "300s",
               "ops outstanding longer than this are marked, reported and flushed; 0 = off", 0,
               1e7},
    OptionSpec{"RINGSIDE_SHUTDOWN_TIMEOUT", Type::kSeconds, "10s",
               "longest a SIGTERM/SIGINT/exit waits for the final flush before going on", 0.1, 600},
    OptionSpec{"RINGSIDE_RING_SIZE", Type::kInt, "8192",
               "op records buffered per application thread; more are dropped and counted", 64,
               1 << 22},
    OptionSpec{"RINGSIDE_NODE_NAME", Type::kString, "",
               "node name for the trace, overriding SLURMD_NODENAME and the hostname"},
    OptionSpec{"RINGSIDE_JOB_ID", Type::kString, "",
               "job id for the trace file name, overriding SLURM_JOB_ID and the other launchers"},
    OptionSpec{"RINGSIDE_DUMP_CONFIG", Type::kBool, "0",
               "print the effective configuration to stderr when the probe starts"},
};

}  // namespace

std::span<const config::OptionSpec> option_specs() {
  return kSpecs;
}

ConfigResult load_config(char** env) {
  ConfigResult out;
  try {
    config::ParseResult parsed = config::parse_env(kSpecs, "RINGSIDE_", env);
    out.errors = std::move(parsed.errors);
    const config::Values& v = parsed.values;
    ProbeConfig& c = out.config;
    c.enable = v.get_bool("RINGSIDE_ENABLE");
    c.output_dir = v.get_string("RINGSIDE_OUTPUT");
    c.device_timing = v.get_bool("RINGSIDE_DEVICE_TIMING");
    c.sample_hz = v.get_double("RINGSIDE_SAMPLE_HZ");
    c.xid_events = v.get_bool("RINGSIDE_XID_EVENTS");
    c.flush_interval_s = v.get_double("RINGSIDE_FLUSH_INTERVAL");
    c.watchdog_timeout_s = v.get_double("RINGSIDE_WATCHDOG_TIMEOUT");
    c.shutdown_timeout_s = v.get_double("RINGSIDE_SHUTDOWN_TIMEOUT");
    c.ring_size = static_cast<uint64_t>(v.get_int("RINGSIDE_RING_SIZE"));
    c.node_name = v.get_string("RINGSIDE_NODE_NAME");
    c.job_id = v.get_string("RINGSIDE_JOB_ID");
    c.dump_config = v.get_bool("RINGSIDE_DUMP_CONFIG");
    if (c.output_dir.empty()) {
      out.errors.push_back("RINGSIDE_OUTPUT is empty; set it to a directory (using the default '" +
                           std::string(kSpecs[1].default_value) + "')");
      c.output_dir = kSpecs[1].default_value;
    }
    c.json = config::to_json(kSpecs, v);
    c.dump = config::dump(kSpecs, v);
  } catch (const std::exception& e) {
    // Only a bug in the parser could get here; keep the job alive on defaults.
    out.config = ProbeConfig{};
    out.errors.push_back(std::string("internal error reading RINGSIDE_* variables: ") + e.what() +
                         " (using defaults)");
  }
  return out;
}

}  // namespace ringside::probe
