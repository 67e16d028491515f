// The environment that makes a task traced: what `ringside run` sets before it execs the
// command, and what the Slurm SPANK plugin sets in each task of a step.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringside::launcher {

struct TracedEnv {
  std::vector<std::pair<std::string, std::string>> set;  // name, value (overwrite)
  std::string note;                                      // one line for the user, or empty
};

// `probe`: the probe library's absolute path; `output`: the trace directory's (empty: the
// probe's default); `preload` and `profiler_plugin`: LD_PRELOAD and NCCL_PROFILER_PLUGIN
// as they are (null: unset); `links`: also NCCL's profiler plugin (per-peer link timing).
// The probe goes first in LD_PRELOAD.  NCCL (>= 2.23) loads one profiler plugin: the
// probe, unless the user chose another, which is kept with a note (collective capture
// works either way).
TracedEnv traced_env(const std::string& probe, const std::string& output, const char* preload,
                     const char* profiler_plugin, bool links);

}  // namespace ringside::launcher
