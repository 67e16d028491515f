// Slurm SPANK plugin: `srun --ringside[=DIR]` (or `#SBATCH --ringside[=DIR]`) traces every
// task of the step, without wrapping the command in `ringside run`.
//
// plugstack.conf:  optional <prefix>/lib/ringside/ringside_spank.so [default_dir=DIR] [probe=PATH]
// [links=0]
//   default_dir  where `--ringside` without DIR writes: DIR/<job id> (one folder per job;
//                its steps are told apart by the analyzer's --step)
//   probe        the probe library (default: <prefix>/lib/libringside_probe.so, found
//                from where this plugin is)
//   links        0: no NCCL profiler plugin (per-peer link timing off)
// In each task, before it execs, the plugin sets what `ringside run` sets (traced_env.h).
// It never fails a job because of itself: a problem is logged and the task runs untraced.
#include <dlfcn.h>
extern "C" {  // spank.h declares the plugin's entry points outside its own extern "C"
#include <slurm/spank.h>
}

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "traced_env.h"

extern "C" {
// The plugin's name and version for Slurm (SPANK_PLUGIN, spelled out for C++).
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
const char plugin_name[] = "ringside";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

bool g_requested = false;
std::string g_dir;          // from --ringside=DIR
std::string g_default_dir;  // plugstack.conf default_dir=
std::string g_probe;        // plugstack.conf probe=
bool g_links = true;

int on_option(int, const char* optarg, int) {
  g_requested = true;
  g_dir = optarg != nullptr ? optarg : "";
  return ESPANK_SUCCESS;
}

char kOptionName[] = "ringside";
char kOptionArg[] = "DIR";
char kOptionUsage[] =
    "Trace every task with the ringside probe into DIR (default: the site's directory, "
    "per job)";
spank_option g_option = {kOptionName, kOptionArg, kOptionUsage, 2, 0, on_option};

// <prefix>/lib/ringside/ringside_spank.so -> <prefix>/lib/libringside_probe.so
std::string default_probe() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_probe), &info) == 0 || info.dli_fname == nullptr)
    return "";
  const std::filesystem::path here = std::filesystem::path(info.dli_fname).parent_path();
  for (const auto& p :
       {here.parent_path() / "libringside_probe.so", here / "libringside_probe.so"}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

// A variable of the task's environment, whole ("" when unset), or nothing when it cannot
// be read whole: a preload chain cut short would lose the task what it preloads.
std::optional<std::string> env_of(spank_t sp, const char* name) {
  for (size_t size = 4096; size <= (size_t{1} << 24); size *= 4) {
    std::string buf(size, '\0');
    const spank_err_t err = spank_getenv(sp, name, buf.data(), static_cast<int>(size));
    if (err == ESPANK_SUCCESS) return std::string(buf.c_str());
    if (err == ESPANK_ENV_NOEXIST) return std::string();
    if (err != ESPANK_NOSPACE) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    const std::string a = av[i];
    if (a.rfind("default_dir=", 0) == 0) {
      g_default_dir = a.substr(12);
    } else if (a.rfind("probe=", 0) == 0) {
      g_probe = a.substr(6);
    } else if (a == "links=0") {
      g_links = false;
    } else {
      slurm_error(
          "ringside: unknown plugstack.conf argument '%s' (known: default_dir=DIR, "
          "probe=PATH, links=0); ignored",
          av[i]);
    }
  }
  if (spank_option_register(sp, &g_option) != ESPANK_SUCCESS)
    slurm_error("ringside: cannot register --ringside");
  return ESPANK_SUCCESS;
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
  if (!g_requested) return ESPANK_SUCCESS;
  std::string dir = g_dir;
  if (dir.empty()) {
    uint32_t job = 0;
    if (g_default_dir.empty() || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
      slurm_error(
          "ringside: --ringside without DIR, and plugstack.conf sets no default_dir=; "
          "this task runs untraced");
      return ESPANK_SUCCESS;
    }
    dir = g_default_dir + "/" + std::to_string(job);
  }
  if (dir.front() != '/') {
    // Relative to where the task starts, as `ringside run -o DIR` would be.
    const std::string cwd = env_of(sp, "PWD").value_or("");
    if (!cwd.empty()) dir = cwd + "/" + dir;
  }
  const std::string probe = g_probe.empty() ? default_probe() : g_probe;
  std::error_code ec;
  if (probe.empty() || !std::filesystem::is_regular_file(probe, ec)) {
    slurm_error(
        "ringside: the probe library %s does not exist (set probe= in plugstack.conf); "
        "this task runs untraced",
        probe.empty() ? "(not found beside the plugin)" : probe.c_str());
    return ESPANK_SUCCESS;
  }
  const std::optional<std::string> preload = env_of(sp, "LD_PRELOAD");
  const std::optional<std::string> plugin = env_of(sp, "NCCL_PROFILER_PLUGIN");
  if (!preload || !plugin) {
    slurm_error(
        "ringside: cannot read the task's LD_PRELOAD or NCCL_PROFILER_PLUGIN whole; "
        "this task runs untraced");
    return ESPANK_SUCCESS;
  }
  const auto env =
      ringside::launcher::traced_env(probe, dir, preload->c_str(), plugin->c_str(), g_links);
  for (const auto& [name, value] : env.set) {
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS)
      slurm_error("ringside: cannot set %s in the task", name.c_str());
  }
  if (!env.note.empty()) slurm_info("ringside: %s", env.note.c_str());
  return ESPANK_SUCCESS;
}
