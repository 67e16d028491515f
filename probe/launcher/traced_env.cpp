#include "traced_env.h"

namespace ringside::launcher {

TracedEnv traced_env(const std::string& probe, const std::string& output, const char* preload,
                     const char* profiler_plugin, bool links) {
  TracedEnv env;
  if (!output.empty()) env.set.emplace_back("RINGSIDE_OUTPUT", output);
  std::string chain = probe;
  if (preload != nullptr && *preload != '\0') chain += std::string(":") + preload;
  env.set.emplace_back("LD_PRELOAD", chain);
  if (!links) return env;
  if (profiler_plugin != nullptr && *profiler_plugin != '\0') {
    env.note = std::string("NCCL_PROFILER_PLUGIN is already ") + profiler_plugin +
               "; keeping it, so per-peer link timing is off (collective capture is unaffected)";
  } else {
    env.set.emplace_back("NCCL_PROFILER_PLUGIN", probe);
  }
  return env;
}

}  // namespace ringside::launcher
