#include "process_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ringside::bench::testing {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir(const std::string& tag) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("nccl_bench_" + tag + "_XXXXXX")).string();
  char* made = mkdtemp(tmpl.data());
  return made ? std::string(made) : std::string();
}

RunResult run_shell(const std::string& command) {
  const std::string dir = temp_dir("run");
  const std::string out = dir + "/out", err = dir + "/err";
  const std::string full = "(" + command + ") >" + out + " 2>" + err;
  const int status = std::system(full.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  std::filesystem::remove_all(dir);
  return r;
}

std::string sim_command(int ranks, int nodes, const std::string& args, const std::string& cluster) {
  std::string c = std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " + SIMRUN_BIN + " -n " +
                  std::to_string(ranks) + " --nodes " + std::to_string(nodes);
  if (!cluster.empty()) c += " --cluster " + cluster;
  c += " -t 300 -- " NCCL_BENCH_BIN " " + args;
  return c;
}

bool sim_available(std::string* why) {
  if (std::string(SIMRUN_BIN).empty() || !std::filesystem::exists(SIMRUN_BIN)) {
    *why = "simrun is not built";
    return false;
  }
  for (const char* lib : {"libcudart.so.13", "libnccl.so.2", "libcuda.so.1"}) {
    if (!std::filesystem::exists(std::filesystem::path(SIM_LIB_DIR) / lib)) {
      *why = std::string("sim library ") + lib + " is not built in " + SIM_LIB_DIR;
      return false;
    }
  }
  return true;
}

}  // namespace ringside::bench::testing
