#include "process_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ringside::probe::testing {

namespace {
int g_counter = 0;
}

std::string make_temp_dir(const std::string& tag) {
  std::string templ =
      (std::filesystem::temp_directory_path() / ("ringside-probe-" + tag + "-XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return templ;
}

Process::Process(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const std::string base =
      std::filesystem::temp_directory_path() /
      ("ringside-probe-proc-" + std::to_string(getpid()) + "-" + std::to_string(++g_counter));
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& x : env) overridden |= x.substr(0, x.find('=')) == name;
    if (!overridden) envs.push_back(kv);
  }
  for (const auto& x : env) envs.push_back(x);
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    std::vector<char*> e;
    for (auto& s : envs) e.push_back(s.data());
    e.push_back(nullptr);
    execvpe(a[0], a.data(), e.data());
    _exit(127);
  }
}

Process::~Process() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::filesystem::remove(out_path_);
  std::filesystem::remove(err_path_);
}

void Process::signal(int sig) const {
  kill(pid_, sig);
}

Exit Process::wait(double timeout_s) {
  Exit e;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      e.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      e.status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Whatever the group left behind (ranks of a killed launcher) goes too.
  kill(-pid_, SIGKILL);
  pid_ = -1;
  e.out = read_file(out_path_);
  e.err = read_file(err_path_);
  return e;
}

bool Process::exits_within(double timeout_s) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: the process stays waitable, so wait() still reports its status.
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid_)
      return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string Process::out_so_far() const {
  return read_file(out_path_);
}

bool Process::wait_for_output(const std::string& text, double timeout_s) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (out_so_far().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

Exit run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
         double timeout_s) {
  Process p(argv, env);
  return p.wait(timeout_s);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace ringside::probe::testing
