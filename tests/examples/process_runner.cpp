#include "process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ringside::testing {
namespace {

std::string temp_path(const char* tag) {
  std::string templ = std::string("/tmp/ringside-examples-") + tag + "-XXXXXX";
  const int fd = mkstemp(templ.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  return templ;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string ProcessResult::describe() const {
  return "exit " + std::to_string(exit_code) + (limit_hit ? " (safety limit hit)" : "") +
         "\n--- stdout ---\n" + out + "--- stderr ---\n" + err;
}

Process::Process(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  out_path_ = temp_path("out");
  err_path_ = temp_path("err");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& extra : env)
      overridden = overridden || extra.substr(0, extra.find('=')) == name;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& extra : env) env_strings.push_back(extra);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    setpgid(0, 0);
    const int out = open(out_path_.c_str(), O_WRONLY | O_TRUNC);
    const int err = open(err_path_.c_str(), O_WRONLY | O_TRUNC);
    const int in = open("/dev/null", O_RDONLY);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    dup2(in, STDIN_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  setpgid(pid_, pid_);
}

Process::~Process() {
  if (!done_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  unlink(out_path_.c_str());
  unlink(err_path_.c_str());
}

void Process::signal(int sig) const {
  kill(pid_, sig);
}

ProcessResult Process::wait(double limit_s) {
  ProcessResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.limit_hit = true;
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  done_ = true;
  r.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  r.out = slurp(out_path_);
  r.err = slurp(err_path_);
  return r;
}

ProcessResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  double limit_s) {
  Process p(argv, env);
  return p.wait(limit_s);
}

int count_lines_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace ringside::testing
