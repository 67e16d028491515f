// trace_fuzz: runs `ringside analyze` over damaged copies of trace directories
// and judges each run.  Every corpus carries a fault, so a sound analysis ends
// with findings (exit 1) or a clear error (exit 2, "ringside: ..." on stderr);
// a crash, a sanitizer report, a run past the time limit or a HEALTHY verdict
// (exit 0: the fault was lost without a word about the damaged data) fails.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mutate.h"

namespace {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `argv` in its own process group with stdout/stderr in `dir`, killing the
// whole group after `timeout_s`.
Run run(const std::vector<std::string>& argv, const fs::path& dir, double timeout_s) {
  Run r;
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  // Unwritten output would otherwise be written again by the child's freopen.
  std::cout.flush();
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    // File descriptors only: no stdio buffer of the parent is written from here.
    setpgid(0, 0);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o < 0 || e < 0 || dup2(o, STDOUT_FILENO) < 0 || dup2(e, STDERR_FILENO) < 0) _exit(127);
    setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1", 1);
    setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.err = slurp(err);
  return r;
}

struct Verdict {
  std::string verdict;
  bool names_bad_data = false;  // a missing_trace finding or a warning
};

Verdict read_report(const fs::path& json, const std::string& err) {
  Verdict v;
  v.names_bad_data = err.find("warning") != std::string::npos;
  try {
    auto j = nlohmann::json::parse(slurp(json));
    v.verdict = j.value("verdict", "");
    for (const auto& f : j["findings"])
      v.names_bad_data = v.names_bad_data || f.value("kind", "") == "missing_trace";
  } catch (const std::exception&) {
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs ringside analyze over damaged copies of trace directories."};
  std::string ringside;
  std::vector<std::string> corpora;
  std::string work = "fuzz-work", keep;
  int cases = 200;
  uint64_t seed = 1;
  int only = -1;
  double timeout_s = 120;
  app.add_option("--ringside", ringside, "the ringside executable")->required();
  app.add_option("--corpus", corpora, "trace directory with a fault in it (repeatable)")
      ->required();
  app.add_option("--cases", cases, "damaged directories to try")->check(CLI::Range(1, 1000000));
  app.add_option("--seed", seed, "seed of the first case");
  app.add_option("--only", only, "run just this case number (to reproduce one)");
  app.add_option("--timeout", timeout_s, "seconds before a run counts as hung")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--work", work, "scratch directory (emptied first)");
  app.add_option("--keep", keep, "copy each failing case's directory here");
  CLI11_PARSE(app, argc, argv);

  fs::remove_all(work);
  fs::create_directories(work);
  // A corpus must end with findings undamaged, or exit 0 would prove nothing.
  std::vector<std::string> baseline;
  for (const auto& c : corpora) {
    const fs::path dir = fs::path(work) / "baseline";
    fs::create_directories(dir);
    Run r = run({ringside, "analyze", c, "--json", (dir / "r.json").string(), "--no-progress"}, dir,
                timeout_s);
    if (r.exit_code != 1) {
      std::cerr << "trace_fuzz: corpus " << c << " must give findings (exit 1), got exit "
                << r.exit_code << "\n"
                << r.err;
      return 2;
    }
    baseline.push_back(read_report(dir / "r.json", r.err).verdict);
    fs::remove_all(dir);
  }

  std::map<std::string, int> tally;
  int failures = 0;
  const int first = only >= 0 ? only : 0, last = only >= 0 ? only + 1 : cases;
  for (int i = first; i < last; ++i) {
    std::mt19937_64 rng(seed * 1000003 + static_cast<uint64_t>(i));
    const size_t which = static_cast<size_t>(i) % corpora.size();
    const fs::path dir = fs::path(work) / ("case-" + std::to_string(i));
    const fs::path traces = dir / "traces";
    fs::create_directories(dir);
    fs::copy(corpora[which], traces, fs::copy_options::recursive);
    const std::string what = ringside::fuzz::mutate_directory(traces, rng);
    const fs::path json = dir / "report.json";
    Run r = run({ringside, "analyze", traces.string(), "--json", json.string(), "--no-progress"},
                dir, timeout_s);
    std::string failure;
    if (r.timed_out) {
      failure = "hang (no end after " + std::to_string(static_cast<int>(timeout_s)) + " s)";
    } else if (r.signal) {
      failure = "crash (signal " + std::to_string(r.signal) + ")";
    } else if (r.err.find("Sanitizer") != std::string::npos ||
               r.err.find("runtime error:") != std::string::npos) {
      failure = "sanitizer report";
    } else if (r.exit_code == 0) {
      failure = "silent healthy (exit 0)";
    } else if (r.exit_code == 2 && r.err.rfind("ringside: ", 0) != 0 &&
               r.err.find("\nringside: ") == std::string::npos) {
      failure = "exit 2 without a message";
    } else if (r.exit_code != 1 && r.exit_code != 2) {
      failure = "exit " + std::to_string(r.exit_code);
    }
    if (failure.empty()) {
      if (r.exit_code == 2) {
        ++tally["clear error (exit 2)"];
      } else {
        const Verdict v = read_report(json, r.err);
        const bool changed = !v.names_bad_data && v.verdict != baseline[which];
        ++tally[v.names_bad_data ? "findings naming the damaged data (exit 1)"
                : changed        ? "findings, verdict changed without naming damage (exit 1)"
                                 : "findings as undamaged (exit 1)"];
        // Not a failure (a plausible value can change a verdict), but worth a look.
        if (changed)
          std::cout << "note: case " << i << ": verdict " << v.verdict << " (undamaged "
                    << baseline[which] << "), damage: " << what << "\n";
      }
      fs::remove_all(dir);
      continue;
    }
    ++failures;
    ++tally[failure.substr(0, failure.find(" ("))];
    std::cout << "FAIL case " << i << " (--seed " << seed << " --only " << i << "): " << failure
              << "\n  damage: " << what << "\n";
    std::istringstream lines(r.err);
    std::string line;
    for (int k = 0; k < 12 && std::getline(lines, line); ++k) std::cout << "  | " << line << "\n";
    if (!keep.empty()) {
      fs::create_directories(keep);
      fs::copy(dir, fs::path(keep) / dir.filename(),
               fs::copy_options::recursive | fs::copy_options::copy_symlinks |
                   fs::copy_options::overwrite_existing);
    }
    fs::remove_all(dir);
  }
  std::cout << "trace_fuzz: " << (last - first) << " damaged directories, seed " << seed << ":\n";
  for (const auto& [k, n] : tally) std::cout << "  " << n << "  " << k << "\n";
  std::cout << "trace_fuzz: " << failures << " failure" << (failures == 1 ? "" : "s")
            << " (crashes, hangs, sanitizer reports, silent healthy)\n";
  return failures ? 1 : 0;
}
