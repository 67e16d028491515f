#include "fleet/accounting.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ringside::analysis::fleet {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// sacct's "2026-11-26T07:18:43" in the local time zone; "Unknown", "None" and
// empty fields are unknown.
std::optional<int64_t> parse_time(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<int64_t>(t);
}

std::optional<int64_t> parse_int(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t used = 0;
  try {
    const long long v = std::stoll(text, &used);
    if (used != text.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// AllocTRES "billing=8,cpu=8,gres/gpu=4,mem=64G,node=1": the GPU count.
std::optional<int64_t> gpus_of_tres(const std::string& tres) {
  for (const std::string& item : split(tres, ',')) {
    const size_t eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == "gres/gpu") {
      return parse_int(item.substr(eq + 1));
    }
  }
  return std::nullopt;
}

Status parse_parsable(const std::string& text, const std::string& source,
                      std::map<std::string, SacctJob>* jobs) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  bool trailing_separator = false;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    // `sacct -p` ends every line with the separator, `sacct -P` does not.
    if (header.empty()) trailing_separator = line.back() == '|';
    if (trailing_separator && line.back() == '|') line.pop_back();
    const std::vector<std::string> cells = split(line, '|');
    if (header.empty()) {
      header = cells;
      bool has_id = false;
      for (const std::string& h : header) has_id |= h == "JobID";
      if (!has_id) {
        return Status::error(source + ": line " + std::to_string(line_no) +
                             ": no JobID column in the header (save it with `sacct -P "
                             "--format=" +
                             kSacctFormat + "`)");
      }
      continue;
    }
    if (cells.size() != header.size()) {
      return Status::error(source + ": line " + std::to_string(line_no) + " has " +
                           std::to_string(cells.size()) + " fields, the header " +
                           std::to_string(header.size()));
    }
    SacctJob j;
    for (size_t i = 0; i < header.size(); ++i) {
      const std::string& h = header[i];
      const std::string& v = cells[i];
      if (h == "JobID")
        j.job_id = v;
      else if (h == "JobName")
        j.name = v;
      else if (h == "Partition")
        j.partition = v;
      else if (h == "User")
        j.user = v;
      else if (h == "State")
        j.state = v;
      else if (h == "Submit")
        j.submit_s = parse_time(v);
      else if (h == "Start")
        j.start_s = parse_time(v);
      else if (h == "End")
        j.end_s = parse_time(v);
      else if (h == "ElapsedRaw") {
        if (auto e = parse_int(v)) j.elapsed_s = static_cast<double>(*e);
      } else if (h == "NodeList")
        j.node_list = v;
      else if (h == "AllocTRES")
        j.gpus = gpus_of_tres(v);
    }
    // Steps (123.batch, 123.0) belong to their job: only the allocation is kept.
    if (j.job_id.empty() || j.job_id.find('.') != std::string::npos) continue;
    if (!j.elapsed_s && j.start_s && j.end_s)
      j.elapsed_s = static_cast<double>(*j.end_s - *j.start_s);
    (*jobs)[j.job_id] = std::move(j);
  }
  if (header.empty()) return Status::error(source + ": empty (no sacct header line)");
  return {};
}

// JSON numbers of sacct --json: plain, or {"set": true, "number": N} (newer Slurm).
std::optional<int64_t> json_number(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_object() && v.value("set", true) && v.contains("number") &&
      v["number"].is_number_integer()) {
    return v["number"].get<int64_t>();
  }
  return std::nullopt;
}

std::string json_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array() && !v.empty() && v[0].is_string()) return v[0].get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return "";
}

Status parse_json(const std::string& text, const std::string& source,
                  std::map<std::string, SacctJob>* jobs) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Status::error(source + ": not valid JSON");
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array()) {
    return Status::error(source + ": no \"jobs\" array (expected the output of `sacct --json`)");
  }
  for (const nlohmann::json& e : doc["jobs"]) {
    if (!e.is_object()) continue;
    SacctJob j;
    j.job_id = json_text(e.value("job_id", nlohmann::json()));
    if (j.job_id.empty()) continue;
    j.name = json_text(e.value("name", nlohmann::json()));
    j.partition = json_text(e.value("partition", nlohmann::json()));
    j.user = json_text(e.value("user", nlohmann::json()));
    if (e.contains("state") && e["state"].is_object())
      j.state = json_text(e["state"].value("current", nlohmann::json()));
    j.node_list = json_text(e.value("nodes", nlohmann::json()));
    if (e.contains("time") && e["time"].is_object()) {
      const nlohmann::json& t = e["time"];
      auto at = [&](const char* key) -> std::optional<int64_t> {
        if (!t.contains(key)) return std::nullopt;
        auto v = json_number(t[key]);
        if (v && *v <= 0) return std::nullopt;  // 0: not yet
        return v;
      };
      j.submit_s = at("submission");
      j.start_s = at("start");
      j.end_s = at("end");
      if (t.contains("elapsed")) {
        if (auto v = json_number(t["elapsed"])) j.elapsed_s = static_cast<double>(*v);
      }
    }
    if (e.contains("tres") && e["tres"].is_object() && e["tres"].contains("allocated") &&
        e["tres"]["allocated"].is_array()) {
      for (const nlohmann::json& t : e["tres"]["allocated"]) {
        if (t.is_object() && json_text(t.value("type", nlohmann::json())) == "gres" &&
            json_text(t.value("name", nlohmann::json())) == "gpu") {
          j.gpus = json_number(t.value("count", nlohmann::json()));
        }
      }
    }
    (*jobs)[j.job_id] = std::move(j);
  }
  return {};
}

}  // namespace

Status parse_sacct(const std::string& text, const std::string& source,
                   std::map<std::string, SacctJob>* jobs) {
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    return c == '{' ? parse_json(text, source, jobs) : parse_parsable(text, source, jobs);
  }
  return Status::error(source + ": empty");
}

Status run_sacct(const std::string& sacct, const std::vector<std::string>& job_ids,
                 std::map<std::string, SacctJob>* jobs) {
  std::string ids;
  for (const std::string& id : job_ids) {
    if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) continue;
    ids += (ids.empty() ? "" : ",") + id;
  }
  if (ids.empty()) return {};
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Status::error("cannot run sacct: pipe failed");
  const std::string format = std::string("--format=") + kSacctFormat;
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    return Status::error("cannot run sacct: fork failed");
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, STDIN_FILENO);
    execlp(sacct.c_str(), sacct.c_str(), "-X", "-P", format.c_str(), "-j", ids.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  // sacct asks slurmdbd; a stuck daemon must not hang the fleet view.
  constexpr int kTimeoutMs = 60000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  std::string text;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[65536];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Status::error(sacct + " did not answer within 60 s");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::error(sacct + " failed (exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                         "; is Slurm accounting (slurmdbd) configured?)");
  }
  return parse_parsable(text.empty() ? std::string() : text, "sacct output", jobs);
}

}  // namespace ringside::analysis::fleet
