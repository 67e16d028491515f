#include "process_util.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

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
  return sim_command_for(NCCL_BENCH_BIN, ranks, nodes, args, cluster);
}

std::string sim_command_for(const std::string& program, int ranks, int nodes,
                            const std::string& args, const std::string& cluster) {
  std::string c = std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " + SIMRUN_BIN + " -n " +
                  std::to_string(ranks) + " --nodes " + std::to_string(nodes);
  if (!cluster.empty()) c += " --cluster " + cluster;
  c += " -t 300 -- " + program + " " + args;
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

void sleep_seconds(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

Background::Background(Background&& o) noexcept
    : pid(o.pid), dir(std::move(o.dir)), out(std::move(o.out)), err(std::move(o.err)) {
  o.dir.clear();
}

Background::~Background() {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

Background start_background(const std::string& command) {
  Background b;
  b.dir = temp_dir("bg");
  b.out = b.dir + "/out";
  b.err = b.dir + "/err";
  const std::string full = "exec " + command + " >" + b.out + " 2>" + b.err;
  std::vector<char*> argv = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                             const_cast<char*>(full.c_str()), nullptr};
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  if (posix_spawn(&b.pid, "/bin/sh", nullptr, &attr, argv.data(), environ) != 0) b.pid = -1;
  posix_spawnattr_destroy(&attr);
  return b;
}

int wait_background(const Background& b, double seconds) {
  int status = 0;
  for (double waited = 0; waited < seconds; waited += 0.05) {
    const pid_t r = waitpid(b.pid, &status, WNOHANG);
    if (r == b.pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    sleep_seconds(0.05);
  }
  kill(-b.pid, SIGKILL);
  waitpid(b.pid, &status, 0);
  return -1;
}

pid_t child_with_env(pid_t parent, const std::string& var, const std::string& value) {
  const std::string want = var + "=" + value;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces.
    const std::string stat = read_file(e.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = -1;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    const std::string env = read_file(e.path().string() + "/environ");
    size_t start = 0;
    while (start < env.size()) {
      size_t end = env.find('\0', start);
      if (end == std::string::npos) end = env.size();
      if (env.compare(start, end - start, want) == 0) return static_cast<pid_t>(std::stol(name));
      start = end + 1;
    }
  }
  return -1;
}

}  // namespace ringside::bench::testing
