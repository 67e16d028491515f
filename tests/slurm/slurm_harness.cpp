#include "slurm_harness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace ringside::slurm_test {

namespace fs = std::filesystem;

const Paths& paths() {
  static const Paths p{RINGSIDE_TEST_BIN_DIR, RINGSIDE_TEST_SIM_LIB_DIR, RINGSIDE_TEST_SOURCE_DIR,
                       RINGSIDE_TEST_WORK_DIR, RINGSIDE_TEST_STATE_FILE};
  return p;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::map<std::string, std::string> cluster_state() {
  std::map<std::string, std::string> vars;
  std::ifstream in(paths().state_file);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return vars;
}

std::string enter_cluster() {
  auto state = cluster_state();
  if (state.count("SLURM_CONF") == 0) {
    return "the Slurm test cluster is not up: no state file " + paths().state_file +
           " (the fixture test slurm.cluster_start starts it; run the tests through ctest)";
  }
  // If ctest itself runs inside a Slurm job, its SLURM_* variables (job id, node
  // list...) would make srun and sbatch talk about that job to our private cluster.
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string var(*e);
    if (var.rfind("SLURM_", 0) == 0 || var.rfind("SLURMD_", 0) == 0)
      inherited.push_back(var.substr(0, var.find('=')));
  }
  for (const auto& name : inherited) unsetenv(name.c_str());
  setenv("SLURM_CONF", state["SLURM_CONF"].c_str(), 1);
  setenv("LD_LIBRARY_PATH", paths().sim_lib_dir.c_str(), 1);
  setenv("PATH", (paths().bin_dir + ":" + std::getenv("PATH")).c_str(), 1);
  // The sim must not inherit a cluster file or node from whoever runs ctest.
  unsetenv("RINGSIM_CLUSTER");
  unsetenv("RINGSIM_NODE");
  unsetenv("NCCL_COMM_ID");
  return "";
}

namespace {

std::string transcript_path() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "no_test";
  return paths().work_dir + "/" + name + ".log";
}

}  // namespace

void reset_transcript() {
  fs::create_directories(paths().work_dir);
  std::ofstream(transcript_path(), std::ios::trunc);
}

ShellResult sh(const std::string& script, int timeout_s) {
  fs::create_directories(paths().work_dir);
  std::string out_path = paths().work_dir + "/.sh_out." + std::to_string(getpid());
  std::string err_path = paths().work_dir + "/.sh_err." + std::to_string(getpid());
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    FILE* o = std::freopen(out_path.c_str(), "w", stdout);
    FILE* e = std::freopen(err_path.c_str(), "w", stderr);
    if (!o || !e) _exit(127);
    execl("/bin/bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ShellResult r;
  int status = 0;
  auto deadline = start + std::chrono::seconds(timeout_s);
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  fs::remove(out_path);
  fs::remove(err_path);

  std::ofstream t(transcript_path(), std::ios::app);
  t << "$ " << script << "\n"
    << "# exit " << r.exit_code << (r.timed_out ? " (TIMED OUT)" : "") << " after " << r.seconds
    << " s\n"
    << "# --- stdout ---\n"
    << r.out << "# --- stderr ---\n"
    << r.err << "\n";
  return r;
}

std::string fresh_dir(const std::string& name) {
  std::string dir = paths().work_dir + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string job_id_by_name(const std::string& job_name) {
  // `scontrol show job -o`: one line per job, kept MinJobAge seconds after it ends.
  ShellResult r = sh("scontrol show job -o", 30);
  std::istringstream lines(r.out);
  std::string line, id;
  while (std::getline(lines, line)) {
    if (line.find(" JobName=" + job_name + " ") == std::string::npos) continue;
    auto p = line.find("JobId=");
    if (p == std::string::npos) continue;
    p += 6;
    id = line.substr(p, line.find(' ', p) - p);
  }
  return id;
}

std::string scenario(const std::string& name) {
  return paths().source_dir + "/tests/slurm/scenarios/" + name;
}

std::string need_binary(const std::string& name) {
  if (fs::exists(paths().bin_dir + "/" + name)) return "";
  return paths().bin_dir + "/" + name + " is missing: build the target '" + name +
         "' (cmake --build <build>)";
}

}  // namespace ringside::slurm_test
