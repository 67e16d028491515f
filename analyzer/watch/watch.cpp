#include "watch/watch.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "report/format.h"
#include "report/output_file.h"
#include "report/report_json.h"
#include "report/report_text.h"
#include "ringside/trace_reader_cache.h"
#include "ringside/count_text.h"
#include "ringside/safe_text.h"
#include "watch/finding_debounce.h"
#include "watch/freed_pages.h"
#include "watch/unchanged_traces.h"

namespace ringside::analysis::watch {
namespace {

using Clock = std::chrono::steady_clock;

// How long pages freed by a poll stay with the process at least, s.
constexpr double kKeepFreedPagesS = 60;

// ISO 8601 in UTC with milliseconds: event times are compared with fault times.
std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

// One --events line (docs/analyzer.md).
std::string event_line(const char* event, const Report& r, const Finding& f) {
  return json_text(nlohmann::json{{"time", utc_now()},
                                  {"event", event},
                                  {"job", r.job},
                                  {"verdict", r.verdict},
                                  {"finding", finding_to_json(f)}});
}

std::string prom_escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

// Commands started for new findings: never waited for in the loop, reaped
// each poll, killed past their time limit.
class Commands {
 public:
  // Made before the watch raises its open-file limit (trace_reader_cache.h): a command
  // gets the limit the watch was started with.
  explicit Commands(double timeout_s) : timeout_s_(timeout_s) {
    if (getrlimit(RLIMIT_NOFILE, &files_limit_) != 0) files_limit_ = {};
  }

  void start(const std::string& command, const Report& r, const Finding& f, std::ostream& err) {
    const std::string json = json_text(finding_to_json(f));
    const pid_t pid = fork();
    if (pid < 0) {
      err << "ringside watch: cannot start --on-finding command: fork failed\n";
      return;
    }
    if (pid == 0) {
      setenv("RINGSIDE_JOB", r.job.c_str(), 1);
      setenv("RINGSIDE_TRACE_DIR", r.dir.c_str(), 1);
      setenv("RINGSIDE_FINDING_KIND", f.kind.c_str(), 1);
      setenv("RINGSIDE_FINDING_SUBKIND", f.subkind.c_str(), 1);
      setenv("RINGSIDE_FINDING_RANKS", join(f.ranks).c_str(), 1);
      setenv("RINGSIDE_FINDING_NODES", join(f.nodes).c_str(), 1);
      setenv("RINGSIDE_FINDING_EVIDENCE", f.evidence.c_str(), 1);
      setenv("RINGSIDE_FINDING_JSON", json.c_str(), 1);
      setpgid(0, 0);
      // Not the trace files the watch keeps open, nor its outputs.
      if (files_limit_.rlim_cur != 0) setrlimit(RLIMIT_NOFILE, &files_limit_);
      close_range(3, ~0U, 0);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    running_.push_back({pid, Clock::now()});
  }

  void reap(std::ostream& err) {
    std::vector<Child> still;
    for (const Child& c : running_) {
      int status = 0;
      const pid_t got = waitpid(c.pid, &status, WNOHANG);
      if (got == c.pid) {
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          err << "ringside watch: --on-finding command (pid " << c.pid << ") "
              << (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                    : "was killed by signal " + std::to_string(WTERMSIG(status)))
              << "\n";
        }
        continue;
      }
      const double age = std::chrono::duration<double>(Clock::now() - c.started).count();
      if (age > timeout_s_) {
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        err << "ringside watch: --on-finding command (pid " << c.pid << ") killed after "
            << fmt("%.0f", timeout_s_) << " s\n";
        continue;
      }
      still.push_back(c);
    }
    running_ = std::move(still);
  }

  // At the end: give running commands their time, then stop them.
  void finish(std::ostream& err) {
    while (!running_.empty()) {
      reap(err);
      if (!running_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  struct Child {
    pid_t pid;
    Clock::time_point started;
  };
  double timeout_s_;
  rlimit files_limit_{};
  std::vector<Child> running_;
};

}  // namespace

std::string prometheus_text(const Report& r) {
  const std::string job = "job=\"" + prom_escape(r.job) + "\"";
  std::string out;
  out += "# HELP ringside_job_hung 1 while the analysis finds the job hung, else 0.\n";
  out += "# TYPE ringside_job_hung gauge\n";
  out += "ringside_job_hung{" + job + "} " + (r.verdict == "hung" ? "1" : "0") + "\n";
  out += "# HELP ringside_findings Open findings of the job, by kind.\n";
  out += "# TYPE ringside_findings gauge\n";
  std::map<std::string, int> kinds;
  for (const auto& f : r.findings) ++kinds[f.kind];
  for (const char* k : {"hang", "desync", "straggler", "imbalance", "slow_link", "gpu_health",
                        "missing_trace", "abnormal_end"}) {
    out += "ringside_findings{" + job + ",kind=\"" + k + "\"} " + std::to_string(kinds[k]) + "\n";
  }
  out += "# HELP ringside_finding_rank 1 for each rank a finding names.\n";
  out += "# TYPE ringside_finding_rank gauge\n";
  for (const auto& f : r.findings) {
    for (size_t i = 0; i < f.ranks.size() && i < 64; ++i) {
      out += "ringside_finding_rank{" + job + ",kind=\"" + prom_escape(f.kind) + "\",subkind=\"" +
             prom_escape(f.subkind) + "\",rank=\"" + std::to_string(f.ranks[i]) + "\",comm=\"" +
             prom_escape(f.comm_label) + "\"} 1\n";
    }
  }
  out +=
      "# HELP ringside_rank_lateness_seconds Mean compute-gap excess over the rank's peers "
      "(the most late ranks).\n";
  out += "# TYPE ringside_rank_lateness_seconds gauge\n";
  if (r.extra.contains("late_ranks")) {
    for (const auto& l : r.extra["late_ranks"]) {
      out += "ringside_rank_lateness_seconds{" + job + ",rank=\"" +
             std::to_string(l.value("rank", int64_t{0})) + "\"} " +
             fmt("%.6f", l.value("mean_excess_ms", 0.0) / 1e3) + "\n";
    }
  }
  out += "# HELP ringside_op_records Op records read from the traces so far.\n";
  out += "# TYPE ringside_op_records gauge\n";
  out += "ringside_op_records{" + job + "} " + std::to_string(r.records) + "\n";
  return out;
}

Result<Report> final_report(const WatchOptions& o, trace::TraceReaderCache& kept) {
  // HDF5 gives a file opened again in the same process the state of the open it already
  // has: a kept reader's view as of its last refresh, not what the writers added since.
  kept.retain({});
  // The post-mortem report: files still open now are what the job left behind.
  AnalyzeOptions final_options = o.analyze;
  final_options.progress = false;
  final_options.window_ops = 0;
  return analyze_directory(o.dir, final_options);
}

int run_watch(const WatchOptions& o, std::ostream& out, std::ostream& err) {
  const auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  std::ofstream events_file;
  std::ostream* events = nullptr;
  if (o.events == "-") {
    events = &out;
  } else if (!o.events.empty()) {
    events_file.open(o.events, std::ios::app);
    if (!events_file) {
      err << "ringside watch: cannot open --events " << o.events << " for appending\n";
      return 2;
    }
    events = &events_file;
  }
  Commands commands(o.on_finding_timeout_s);
  FindingDebounce debounce;
  std::string last_error;
  uint64_t last_records = 0;
  double last_time = 0;
  std::optional<Report> last;
  JobEnd job_end;
  OpWindowCache rows_before;
  trace::TraceDirCache headers;
  trace::TraceReaderCache open_files(o.open_files);
  WindowRowCache window_rows;
  RankTablesCache rank_tables;
  AnalyzeOptions analyze = o.analyze;
  analyze.progress = false;
  analyze.thresholds.live = true;
  analyze.views = false;  // drawn by the HTML report only, never live
  analyze.window_cache = &rows_before;
  analyze.dir_cache = &headers;
  analyze.reader_cache = &open_files;
  analyze.row_cache = &window_rows;
  analyze.tables_cache = &rank_tables;
  UnchangedTraces unchanged;
  for (;;) {
    // What a poll frees, the next one allocates again: kept over many polls, however long a
    // poll takes on a loaded host (freed_pages.h).  Set at every poll: the allocator makes
    // an arena for the largest blocks when the first is asked for, and purges it at once.
    keep_freed_pages(std::max(kKeepFreedPagesS, 20 * o.poll_s));
    // No trace changed since the last analysis: its report is the one a new
    // analysis would give (unchanged_traces.h).
    const bool reused = unchanged.check(o.dir) && last.has_value();
    Status failed;
    if (!reused) {
      if (auto result = analyze_directory(o.dir, analyze); result.ok()) {
        unchanged.analyzed();
        last = std::move(result.value());
      } else {
        failed = result.status();
      }
    }
    if (!failed.ok()) {
      // Before the job starts there is nothing to read yet: say so once.
      if (failed.message() != last_error) err << "ringside watch: " << failed.message() << "\n";
      last_error = failed.message();
    } else {
      last_error.clear();
      const Report& r = *last;
      const int64_t traced = r.extra.value("ranks_traced", int64_t{0});
      const int64_t closed = r.extra.value("ranks_closed", int64_t{0});
      int64_t dead = 0;
      for (const auto& f : r.findings) {
        if (f.subkind == "dead_rank") dead += static_cast<int64_t>(f.ranks.size());
      }
      const bool job_over = job_end.update(r.ranks, traced, closed, dead);
      const FindingDebounce::Changes changes = debounce.update(r.findings, job_over);
      for (const Finding& f : changes.added) {
        out << "\n[" << utc_now() << "] new finding:";
        render_finding(f, 1, out);
        if (events != nullptr) *events << event_line("new", r, f) << "\n";
        if (!o.on_finding.empty()) commands.start(o.on_finding, r, f, err);
      }
      for (const Finding& f : changes.cleared) {
        if (events != nullptr) *events << event_line("cleared", r, f) << "\n";
      }
      if (events != nullptr) events->flush();
      if (!o.quiet) {
        const double t = elapsed();
        const double rate = last_time > 0 && t > last_time
                                ? static_cast<double>(r.records - last_records) / (t - last_time)
                                : 0;
        out << "[" << utc_now() << "] " << count_text(r.ranks, "rank") << ", " << r.records
            << " op records (" << fmt("%.0f", rate) << "/s), verdict " << r.verdict << ", "
            << count_text(static_cast<int64_t>(r.findings.size()), "finding")
            << (reused ? ", analysis reused (no trace changed)" : "") << "\n";
        out.flush();
        last_records = r.records;
        last_time = t;
      }
      if (!o.prom.empty()) {
        if (Status st = write_output_file(o.prom, prometheus_text(r), '#'); !st.ok())
          err << "ringside watch: --prom " << st.message() << "\n";
      }
      if (job_over) break;
    }
    commands.reap(err);
    if (o.until_s > 0 && elapsed() >= o.until_s) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
  }
  commands.finish(err);
  if (last) {
    if (auto report = final_report(o, open_files); report.ok()) last = std::move(report.value());
  }
  if (!last) {
    err << "ringside watch: no readable trace in " << o.dir << " after " << fmt("%.0f", elapsed())
        << " s\n";
    return 2;
  }
  // As `analyze` says them: files that could not be read, hosts short of CPU.
  for (const auto& w : last->warnings) err << "ringside watch: warning: " << printable(w) << "\n";
  out << "\n";
  render_text(*last, out);
  if (!o.json.empty()) {
    const std::string text = json_text(report_to_json(*last), 2) + "\n";
    if (Status st = write_output_file(o.json, text, '{'); !st.ok()) {
      err << "ringside watch: --json " << st.message() << "\n";
      return 2;
    }
  }
  return exit_code(*last);
}

}  // namespace ringside::analysis::watch
