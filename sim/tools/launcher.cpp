#include "launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>

#include "rank_layout.h"

extern char** environ;

namespace ringside::sim {
namespace {

const char* ranks_word(int n) {
  return n == 1 ? "rank" : "ranks";
}

using Clock = std::chrono::steady_clock;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int status_code(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 1;
}

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(pid_t group, pid_t parent, const sigset_t& old_mask, const char* path,
                             char* const* argv, char* const* envp) {
  // Die with simrun even if it is SIGKILLed; SIGTERM lets a probe flush.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  setpgid(0, group);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    dup2(devnull, STDIN_FILENO);
    close(devnull);
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  execve(path, argv, envp);
  const char msg[] = "simrun: execve failed for the rank's program\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(127);
}

struct Child {
  int rank = 0;
  std::string node;
  bool running = true;
};

class Job {
 public:
  explicit Job(const LaunchOptions& options) : options_(options) {}

  int run() {
    const std::string path = resolve_program(options_.command.front());
    const auto placements = place_ranks(options_.ranks, options_.nodes);
    JobEnv job;
    job.world_size = options_.ranks;
    job.comm_id = "127.0.0.1:" + std::to_string(find_free_port());
    job.job_id = make_job_id(std::getenv("RINGSIDE_JOB_ID"));
    job.cluster_file = options_.cluster_file;

    std::vector<char*> argv;
    for (const auto& arg : options_.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);

    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGTERM);
    sigset_t old_mask;
    sigprocmask(SIG_BLOCK, &handled, &old_mask);

    const pid_t parent = getpid();
    for (const auto& placement : placements) {
      // Built before fork: the child may only make async-signal-safe calls.
      const auto env_strings = merge_env(environ, rank_env(placement, job));
      std::vector<char*> envp;
      for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
      envp.push_back(nullptr);

      const pid_t pid = fork();
      if (pid < 0) {
        std::fprintf(stderr, "simrun: fork failed for rank %d: %s\n", placement.rank,
                     std::strerror(errno));
        terminate_all(SIGKILL);
        reap_all_blocking();
        sigprocmask(SIG_SETMASK, &old_mask, nullptr);
        return 1;
      }
      if (pid == 0) exec_child(group_, parent, old_mask, path.c_str(), argv.data(), envp.data());
      if (group_ == 0) group_ = pid;
      setpgid(pid, group_);  // also in the parent, so kill(-group) never races the child
      children_[pid] = Child{placement.rank, placement.node_name, true};
      ++live_;
    }

    const int code = wait_loop(handled);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return code;
  }

 private:
  void terminate_all(int sig) {
    if (group_ != 0) kill(-group_, sig);
  }

  void start_kill_timer() {
    if (!kill_deadline_) {
      kill_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(options_.kill_after_s));
    }
  }

  void record_exit(pid_t pid, int status) {
    auto it = children_.find(pid);
    if (it == children_.end() || !it->second.running) return;
    it->second.running = false;
    --live_;
    const int code = status_code(status);
    if (code != 0) {
      std::fprintf(stderr, "simrun: rank %d (%s, pid %d) %s\n", it->second.rank,
                   it->second.node.c_str(), static_cast<int>(pid), describe_status(status).c_str());
      if (first_failure_ == 0) first_failure_ = code;
      if (options_.kill_on_bad_exit && live_ > 0 && !bad_exit_kill_sent_) {
        bad_exit_kill_sent_ = true;
        std::fprintf(stderr, "simrun: --kill-on-bad-exit: sending SIGTERM to the other %d %s\n",
                     live_, ranks_word(live_));
        terminate_all(SIGTERM);
        start_kill_timer();
      }
    }
  }

  void reap_ready() {
    for (;;) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      record_exit(pid, status);
    }
  }

  void reap_all_blocking() {
    while (live_ > 0) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, 0);
      if (pid < 0) return;
      record_exit(pid, status);
    }
  }

  int wait_loop(const sigset_t& handled) {
    std::optional<Clock::time_point> time_limit;
    if (options_.timeout_s > 0) {
      time_limit = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.timeout_s));
    }
    while (live_ > 0) {
      std::optional<Clock::time_point> next;
      if (time_limit) next = *time_limit;
      if (kill_deadline_ && (!next || *kill_deadline_ < *next)) next = *kill_deadline_;

      siginfo_t info{};
      int sig = -1;
      if (next) {
        const auto left = std::max(Clock::duration::zero(), *next - Clock::now());
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
        sig = sigtimedwait(&handled, &info, &ts);
      } else {
        sig = sigwaitinfo(&handled, &info);
      }
      if (sig == SIGINT || sig == SIGTERM) {
        std::fprintf(stderr, "simrun: got %s, forwarding it to %d running %s\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM", live_, ranks_word(live_));
        terminate_all(sig);
        start_kill_timer();
      }
      reap_ready();
      const auto now = Clock::now();
      if (time_limit && now >= *time_limit && live_ > 0) {
        std::fprintf(stderr,
                     "simrun: time limit of %g s reached, sending SIGTERM to %d running %s "
                     "(SIGKILL in %g s)\n",
                     options_.timeout_s, live_, ranks_word(live_), options_.kill_after_s);
        time_limit.reset();
        timed_out_ = true;
        terminate_all(SIGTERM);
        start_kill_timer();
      }
      if (kill_deadline_ && now >= *kill_deadline_ && live_ > 0) {
        std::fprintf(stderr, "simrun: %d %s still running after %g s, sending SIGKILL\n", live_,
                     ranks_word(live_), options_.kill_after_s);
        kill_deadline_.reset();
        terminate_all(SIGKILL);
        reap_all_blocking();
      }
    }
    if (timed_out_ && first_failure_ == 0) {
      // Ranks that caught SIGTERM and exited 0 were still cut off by the time
      // limit: never report such a job as a success.
      std::fprintf(stderr, "simrun: every rank exited 0 after the time limit; exiting with %d\n",
                   128 + SIGTERM);
      return 128 + SIGTERM;
    }
    return first_failure_;
  }

  const LaunchOptions& options_;
  std::map<pid_t, Child> children_;
  pid_t group_ = 0;
  int live_ = 0;
  int first_failure_ = 0;
  bool bad_exit_kill_sent_ = false;
  bool timed_out_ = false;
  std::optional<Clock::time_point> kill_deadline_;
};

}  // namespace

std::string resolve_program(const std::string& program) {
  if (program.empty()) throw LaunchError{"the program name after '--' is empty"};
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    throw LaunchError{"program '" + program + "' does not exist or is not executable"};
  }
  const char* path_env = std::getenv("PATH");
  std::string_view path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  throw LaunchError{"program '" + program +
                    "' was not found in PATH; give its path (for example ./" + program + ")"};
}

namespace {

// The first port of the kernel's ephemeral range (outgoing connections), or 0.
int ephemeral_range_start() {
  std::FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f == nullptr) return 0;
  int lo = 0;
  int hi = 0;
  const bool ok = std::fscanf(f, "%d %d", &lo, &hi) == 2;
  std::fclose(f);
  return ok ? lo : 0;
}

// Binds `port` (0: any) on 127.0.0.1 and returns the port bound, or -1.
int try_bind(int port, int& error) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  int bound = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  } else {
    error = errno;
  }
  close(fd);
  return bound;
}

}  // namespace

int find_free_port() {
  // Below the ephemeral range when there is room: a port from that range can be
  // given to any process's outgoing connection (ranks of other jobs connect all
  // the time) between this check and the moment rank 0 listens on it.
  constexpr int kFirst = 10000;
  const int limit = ephemeral_range_start();
  int error = 0;
  if (limit - kFirst >= 1000) {
    const auto seed =
        static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    uint64_t x = seed | 1;
    for (int attempt = 0; attempt < 200; ++attempt) {
      x ^= x << 13;  // xorshift: no shared generator state between callers
      x ^= x >> 7;
      x ^= x << 17;
      const int port = kFirst + static_cast<int>(x % static_cast<uint64_t>(limit - kFirst));
      if (try_bind(port, error) == port) return port;
    }
  }
  const int port = try_bind(0, error);
  if (port < 0) {
    throw LaunchError{std::string("could not find a free TCP port on 127.0.0.1: ") +
                      std::strerror(error)};
  }
  return port;
}

int run_job(const LaunchOptions& options) {
  Job job(options);
  return job.run();
}

}  // namespace ringside::sim
