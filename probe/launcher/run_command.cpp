// `ringside run [flags] -- CMD ARGS...`: sets RINGSIDE_* from the flags,
// prepends the probe to LD_PRELOAD and execs the command in place, so it
// works as one `ringside run` per task under srun or mpirun.
#include "run_command.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringside/config_spec.h"
#include "traced_env.h"

namespace ringside::launcher {

namespace {

struct RunOptions {
  std::string output;
  std::string sample_hz;
  std::string flush_interval;
  std::string watchdog_timeout;
  std::string ring_size;
  std::string job_id;
  std::string node_name;
  bool no_device_timing = false;
  bool no_xid = false;
  bool dump_config = false;
  bool links = true;
  std::string probe_path;
  std::vector<std::string> command;
};

// <prefix>/bin/ringside -> <prefix>/lib/libringside_probe.so
std::filesystem::path default_probe_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error("cannot find the ringside executable (/proc/self/exe): " +
                             ec.message());
  return exe.parent_path().parent_path() / "lib" / "libringside_probe.so";
}

void set_env(const char* name, const std::string& value) {
  if (value.empty()) return;
  if (setenv(name, value.c_str(), 1) != 0) {
    throw std::runtime_error(std::string("setenv(") + name + ") failed: " + strerror(errno));
  }
}

[[noreturn]] void run(const RunOptions& o) {
  std::filesystem::path probe =
      o.probe_path.empty() ? default_probe_path() : std::filesystem::path(o.probe_path);
  std::error_code ec;
  probe = std::filesystem::absolute(probe, ec);
  if (!std::filesystem::is_regular_file(probe, ec)) {
    throw std::runtime_error("the probe library " + probe.string() +
                             " does not exist; reinstall ringside or pass --probe PATH");
  }
  set_env("RINGSIDE_SAMPLE_HZ", o.sample_hz);
  set_env("RINGSIDE_FLUSH_INTERVAL", o.flush_interval);
  set_env("RINGSIDE_WATCHDOG_TIMEOUT", o.watchdog_timeout);
  set_env("RINGSIDE_RING_SIZE", o.ring_size);
  set_env("RINGSIDE_JOB_ID", o.job_id);
  set_env("RINGSIDE_NODE_NAME", o.node_name);
  if (o.no_device_timing) set_env("RINGSIDE_DEVICE_TIMING", "0");
  if (o.no_xid) set_env("RINGSIDE_XID_EVENTS", "0");
  if (o.dump_config) set_env("RINGSIDE_DUMP_CONFIG", "1");
  // The output absolute, so that the command changing directory does not move the traces.
  const TracedEnv env = traced_env(
      probe.string(), o.output.empty() ? "" : std::filesystem::absolute(o.output, ec).string(),
      getenv("LD_PRELOAD"), getenv("NCCL_PROFILER_PLUGIN"), o.links);
  for (const auto& [name, value] : env.set) set_env(name.c_str(), value);
  if (!env.note.empty()) std::fprintf(stderr, "ringside run: %s\n", env.note.c_str());
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  throw std::runtime_error("cannot run '" + o.command.front() + "': " + strerror(errno));
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* run_cmd = app.add_subcommand("run",
                                         "Run a command with the ringside probe preloaded (one per "
                                         "rank: srun ... ringside run -- CMD)");
  run_cmd->add_option("-o,--output", opts->output, "Trace directory (RINGSIDE_OUTPUT)");
  run_cmd
      ->add_option("--sample-hz", opts->sample_hz,
                   "GPU counter sampling rate, 0-10, 0 = off (RINGSIDE_SAMPLE_HZ)")
      ->check(CLI::Range(0.0, 10.0));
  run_cmd->add_option("--flush-interval", opts->flush_interval,
                      "Seconds between flushes, e.g. 1s, 500ms (RINGSIDE_FLUSH_INTERVAL)");
  run_cmd->add_option(
      "--watchdog-timeout", opts->watchdog_timeout,
      "Mark ops outstanding longer than this, e.g. 300s, 5m; 0 = off (RINGSIDE_WATCHDOG_TIMEOUT)");
  run_cmd
      ->add_option("--ring-size", opts->ring_size,
                   "Op records buffered per thread (RINGSIDE_RING_SIZE)")
      ->check(CLI::Range(64, 1 << 22));
  run_cmd->add_option("--job-id", opts->job_id, "Job id for file names (RINGSIDE_JOB_ID)");
  run_cmd->add_option("--node-name", opts->node_name,
                      "Node name for the trace (RINGSIDE_NODE_NAME)");
  run_cmd->add_flag("--no-device-timing", opts->no_device_timing,
                    "Do not record CUDA events around ops (RINGSIDE_DEVICE_TIMING=0)");
  run_cmd->add_flag("--no-xid", opts->no_xid,
                    "Do not record NVML XID events (RINGSIDE_XID_EVENTS=0)");
  run_cmd->add_flag("--links,!--no-links", opts->links,
                    "Per-peer network transfer timing through NCCL's profiler plugin interface, "
                    "on by default: sets NCCL_PROFILER_PLUGIN to the probe unless already set "
                    "(NCCL >= 2.23; --no-links leaves NCCL_PROFILER_PLUGIN alone)");
  run_cmd->add_flag("--dump-config", opts->dump_config,
                    "Print the probe's effective configuration at start (RINGSIDE_DUMP_CONFIG=1)");
  run_cmd
      ->add_option("--probe", opts->probe_path,
                   "Probe library to preload (default: <prefix>/lib/libringside_probe.so next to "
                   "this ringside)")
      ->check(CLI::ExistingFile);
  run_cmd->add_option("command", opts->command, "Command and arguments, after --")->required();
  run_cmd->footer(
      "Every flag sets the RINGSIDE_* variable named in its help; variables already in the "
      "environment are\n"
      "kept when the flag is not given. See docs/probe.md.");
  run_cmd->callback([opts] {
    for (const std::string* v : {&opts->flush_interval, &opts->watchdog_timeout}) {
      if (!v->empty()) {
        auto parsed = config::parse_seconds(*v);
        if (!parsed.ok()) throw CLI::ValidationError("duration", *v + ": " + parsed.message());
      }
    }
    run(*opts);
  });
}

}  // namespace ringside::launcher
