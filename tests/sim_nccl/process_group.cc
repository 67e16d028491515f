#include "process_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "launcher.h"

extern char** environ;

namespace ringside::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<RankResult> run_ranks(const LaunchSpec& spec) {
  std::map<std::string, std::string> common;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) common[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // Start from a clean slate for the variables the sim reads.
  for (const char* k :
       {"NCCL_COMM_ID", "RINGSIM_CLUSTER", "RINGSIM_NODE", "RINGSIM_DEBUG", "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK", "SLURMD_NODENAME", "SLURM_JOB_ID"}) {
    common.erase(k);
  }
  common["LD_LIBRARY_PATH"] = RINGSIM_TEST_LIB_DIR;
  common["WORLD_SIZE"] = std::to_string(spec.nranks);
  if (spec.comm_id)
    common["NCCL_COMM_ID"] = "127.0.0.1:" + std::to_string(ringside::sim::find_free_port());
  for (const auto& [k, v] : spec.env) common[k] = v;

  char dir_template[] = "/tmp/ringsim_test_XXXXXX";
  std::string dir = mkdtemp(dir_template);
  std::vector<pid_t> pids(spec.nranks);
  for (int r = 0; r < spec.nranks; ++r) {
    auto env = common;
    env["RANK"] = std::to_string(r);
    env["LOCAL_RANK"] = std::to_string(r);
    if (r < static_cast<int>(spec.rank_env.size())) {
      for (const auto& [k, v] : spec.rank_env[r]) env[k] = v;
    }
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = spec.argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::string out = dir + "/out" + std::to_string(r), err = dir + "/err" + std::to_string(r);
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fo, 1);
      dup2(fe, 2);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    pids[r] = pid;
  }
  std::vector<RankResult> results(spec.nranks);
  std::vector<bool> done(spec.nranks, false);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(spec.timeout_s);
  int remaining = spec.nranks;
  while (remaining > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < spec.nranks; ++r) {
      if (done[r]) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        done[r] = true;
        --remaining;
        results[r].finished = true;
        results[r].exited = WIFEXITED(status);
        results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        results[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < spec.nranks; ++r) {
    if (!done[r]) {
      kill(-pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
    }
    results[r].out = slurp(dir + "/out" + std::to_string(r));
    results[r].err = slurp(dir + "/err" + std::to_string(r));
    std::remove((dir + "/out" + std::to_string(r)).c_str());
    std::remove((dir + "/err" + std::to_string(r)).c_str());
  }
  rmdir(dir.c_str());
  return results;
}

std::string describe(const std::vector<RankResult>& results) {
  std::string s;
  for (size_t r = 0; r < results.size(); ++r) {
    const RankResult& x = results[r];
    s += "rank " + std::to_string(r) + ": " +
         (!x.finished ? std::string("still running (killed)")
          : x.exited  ? "exit " + std::to_string(x.exit_code)
                      : "signal " + std::to_string(x.signal)) +
         "\n  stdout: " + x.out.substr(0, 2000) + "\n  stderr: " + x.err.substr(0, 2000) + "\n";
  }
  return s;
}

}  // namespace ringside::test
