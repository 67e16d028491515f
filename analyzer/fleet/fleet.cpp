#include "fleet/fleet.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "report/input_file.h"
#include "report/report.h"

namespace ringside::analysis::fleet {
namespace {

namespace fs = std::filesystem;

// Findings that blame the machine, not the program: a node, GPU or link that
// keeps being named across jobs is a repair case.  Imbalance, desyncs and
// deadlock cycles are the program's; stuck-everywhere hangs and missing traces
// name no culprit.
bool blames_hardware(const std::string& kind, const std::string& subkind) {
  if (kind == "straggler") return subkind == "gpu" || subkind == "node";
  if (kind == "slow_link" || kind == "gpu_health") return true;
  if (kind == "hang")
    return subkind == "gpu_stall" || subkind == "dead_rank" || subkind == "missing_rank";
  return false;
}

std::string text_of(const nlohmann::json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

double number_of(const nlohmann::json& o, const char* key, double otherwise = 0) {
  return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : otherwise;
}

std::vector<std::string> strings_of(const nlohmann::json& o, const char* key) {
  std::vector<std::string> out;
  if (!o.is_object() || !o.contains(key) || !o[key].is_array()) return out;
  for (const auto& v : o[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::optional<double> mean_of(const nlohmann::json& usage, const char* key) {
  if (!usage.is_object() || !usage.contains(key) || !usage[key].is_object()) return std::nullopt;
  const nlohmann::json& s = usage[key];
  if (!s.contains("mean") || !s["mean"].is_number()) return std::nullopt;
  return s["mean"].get<double>();
}

// Reads one file; false (and no error) when it is JSON but not a report.
Status read_report(const std::string& path, JobRun* run, bool* is_report) {
  *is_report = false;
  const auto text = read_input_file(path);
  if (!text) return Status::error(path + ": cannot be read");
  const nlohmann::json r = nlohmann::json::parse(*text, nullptr, false);
  if (r.is_discarded() || !r.is_object() || text_of(r, "schema") != kReportSchema) {
    return {};
  }
  *is_report = true;
  run->path = path;
  run->job = text_of(r, "job");
  run->step = text_of(r, "step");
  run->verdict = text_of(r, "verdict");
  run->nodes = strings_of(r, "nodes");
  if (run->job.empty()) return Status::error(path + ": report without a job id");
  const nlohmann::json usage = r.contains("usage") ? r["usage"] : nlohmann::json();
  // Reports from before `usage`: the traced ranks and the what-if's job time.
  run->gpus = static_cast<int64_t>(
      number_of(usage, "gpus", number_of(r, "ranks_traced", number_of(r, "ranks"))));
  run->seconds =
      number_of(usage, "seconds", r.contains("what_if") ? number_of(r["what_if"], "actual_s") : 0);
  run->gpu_util_pct = mean_of(usage, "gpu_util_pct");
  run->mem_util_pct = mean_of(usage, "mem_util_pct");
  if (r.contains("findings") && r["findings"].is_array()) {
    for (const nlohmann::json& f : r["findings"]) {
      const std::string kind = text_of(f, "kind"), subkind = text_of(f, "subkind");
      if (kind.empty()) return Status::error(path + ": a finding without a kind");
      run->finding_kinds.push_back(subkind.empty() ? kind : kind + "/" + subkind);
      if (!blames_hardware(kind, subkind)) continue;
      Blame b;
      b.kind = kind;
      b.subkind = subkind;
      b.nodes = strings_of(f, "nodes");
      b.gpu_uuid = text_of(f, "gpu_uuid");
      b.cost_s = std::max(0.0, number_of(f, "cost_s"));
      b.evidence = text_of(f, "evidence");
      if (!b.nodes.empty()) run->blames.push_back(std::move(b));
    }
  }
  return {};
}

void add_blame(std::map<std::pair<std::string, std::string>, Culprit>& by_name,
               const std::string& what, const std::string& name, const std::string& node,
               const JobRun& run, const Blame& b) {
  Culprit& c = by_name[{what, name}];
  c.what = what;
  c.name = name;
  c.node = node;
  if (std::find(c.jobs.begin(), c.jobs.end(), run.job) == c.jobs.end()) c.jobs.push_back(run.job);
  const double lost = b.cost_s * static_cast<double>(run.gpu_count()) / 3600;
  ++c.findings;
  ++c.kinds[b.subkind.empty() ? b.kind : b.kind + "/" + b.subkind];
  if (c.evidence.empty() || lost > c.gpu_hours_lost) {
    c.evidence = "job " + run.job + ": " + b.evidence;
  }
  c.gpu_hours_lost += lost;
}

bool ran_on(const JobRun& run, const std::string& node) {
  return std::find(run.nodes.begin(), run.nodes.end(), node) != run.nodes.end();
}

}  // namespace

int64_t JobRun::gpu_count() const {
  return sacct && sacct->gpus && *sacct->gpus > 0 ? *sacct->gpus : gpus;
}

double JobRun::run_seconds() const {
  return sacct && sacct->elapsed_s ? *sacct->elapsed_s : seconds;
}

Status load_reports(const std::vector<std::string>& paths, std::vector<JobRun>* runs,
                    std::vector<std::string>* warnings) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".json")
          found.push_back(it->path().string());
      }
      if (ec) return Status::error(p + ": cannot be listed: " + ec.message());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      return Status::error(p + ": no such file or directory");
    }
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (const std::string& f : files) {
    JobRun run;
    bool is_report = false;
    if (Status s = read_report(f, &run, &is_report); !s.ok()) return s;
    if (!is_report) {
      warnings->push_back(f + ": not a ringside report (skipped)");
      continue;
    }
    if (!seen.insert({run.job, run.step}).second) {
      warnings->push_back(f + ": another report of job " + run.job +
                          (run.step.empty() ? "" : " step " + run.step) +
                          " was read first (skipped)");
      continue;
    }
    runs->push_back(std::move(run));
  }
  return {};
}

FleetSummary summarize_fleet(std::vector<JobRun> runs, int64_t drain_after) {
  FleetSummary s;
  s.drain_after = drain_after;
  std::map<std::pair<std::string, std::string>, Culprit> by_name;
  for (const JobRun& run : runs) {
    s.gpu_hours += static_cast<double>(run.gpu_count()) * run.run_seconds() / 3600;
    for (const Blame& b : run.blames) {
      s.gpu_hours_lost += b.cost_s * static_cast<double>(run.gpu_count()) / 3600;
      if (b.kind == "slow_link" && b.subkind == "node_pair" && b.nodes.size() == 2) {
        std::string a = b.nodes[0], c = b.nodes[1];
        if (c < a) std::swap(a, c);
        add_blame(by_name, "link", a + "<->" + c, "", run, b);
        continue;
      }
      std::set<std::string> nodes(b.nodes.begin(), b.nodes.end());
      for (const std::string& n : nodes) add_blame(by_name, "node", n, "", run, b);
      if (!b.gpu_uuid.empty() && nodes.size() == 1) {
        add_blame(by_name, "gpu", b.gpu_uuid, *nodes.begin(), run, b);
      }
    }
  }
  for (auto& [key, c] : by_name) {
    for (const JobRun& run : runs) {
      if (c.what == "link") {
        const size_t sep = c.name.find("<->");
        c.jobs_seen += ran_on(run, c.name.substr(0, sep)) && ran_on(run, c.name.substr(sep + 3));
      } else {
        c.jobs_seen += ran_on(run, c.what == "gpu" ? c.node : c.name);
      }
    }
    c.drain = c.what == "node" && static_cast<int64_t>(c.jobs.size()) >= drain_after;
    s.culprits.push_back(std::move(c));
  }
  std::stable_sort(s.culprits.begin(), s.culprits.end(), [](const Culprit& a, const Culprit& b) {
    if (a.jobs.size() != b.jobs.size()) return a.jobs.size() > b.jobs.size();
    if (a.gpu_hours_lost != b.gpu_hours_lost) return a.gpu_hours_lost > b.gpu_hours_lost;
    // A node before its GPU or links when they tie: it is what gets drained.
    auto order = [](const std::string& what) {
      return what == "node" ? 0 : what == "link" ? 1 : 2;
    };
    return order(a.what) < order(b.what);
  });
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const JobRun& run : runs) {
    const std::string partition =
        run.sacct && !run.sacct->partition.empty() ? run.sacct->partition : "(unknown)";
    const std::string user = run.sacct && !run.sacct->user.empty() ? run.sacct->user : "(unknown)";
    for (const auto& [by, name] : {std::pair<std::string, std::string>{"partition", partition},
                                   std::pair<std::string, std::string>{"user", user}}) {
      Group& g = groups[{by, name}];
      g.by = by;
      g.name = name;
      ++g.jobs;
      if (run.sacct) {
        if (auto w = run.sacct->wait_s()) g.wait_s.push_back(*w);
      }
      g.run_s.push_back(run.run_seconds());
      g.gpu_hours.push_back(static_cast<double>(run.gpu_count()) * run.run_seconds() / 3600);
      if (run.gpu_util_pct) g.gpu_util_pct.push_back(*run.gpu_util_pct);
      if (run.mem_util_pct) g.mem_util_pct.push_back(*run.mem_util_pct);
    }
  }
  for (auto& [key, g] : groups) s.groups.push_back(std::move(g));
  s.runs = std::move(runs);
  return s;
}

}  // namespace ringside::analysis::fleet
