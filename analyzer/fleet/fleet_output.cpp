#include "fleet/fleet_output.h"

#include <string>
#include <vector>

#include "report/format.h"
#include "report/quantile.h"
#include "ringside/count_text.h"
#include "ringside/safe_text.h"

namespace ringside::analysis::fleet {
namespace {

// {p5, p25, p50, p75, p95}: the distribution's CDF at five points; null when empty.
nlohmann::json cdf_of(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  return {{"p5", quantile_of(v, 0.05)},
          {"p25", quantile_of(v, 0.25)},
          {"p50", quantile_of(v, 0.5)},
          {"p75", quantile_of(v, 0.75)},
          {"p95", quantile_of(v, 0.95)}};
}

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string drain_command(const Culprit& c) {
  std::string kinds;
  for (const auto& [k, n] : c.kinds) kinds += (kinds.empty() ? "" : ",") + k;
  return "scontrol update nodename=" + shell_quote(c.name) + " state=drain reason=" +
         shell_quote("ringside: culprit in " + std::to_string(c.jobs.size()) + " jobs (" + kinds +
                     ")");
}

std::string percent(const std::optional<double>& v) {
  return v ? fmt("%.0f%%", *v) : std::string("-");
}

}  // namespace

nlohmann::json fleet_json(const FleetSummary& s) {
  nlohmann::json culprits = nlohmann::json::array();
  for (const Culprit& c : s.culprits) {
    nlohmann::json j = {{"what", c.what},           {"name", c.name},
                        {"jobs", c.jobs},           {"jobs_blamed", c.jobs.size()},
                        {"jobs_seen", c.jobs_seen}, {"findings", c.findings},
                        {"kinds", c.kinds},         {"gpu_hours_lost", c.gpu_hours_lost},
                        {"evidence", c.evidence},   {"drain", c.drain}};
    if (!c.node.empty()) j["node"] = c.node;
    if (c.drain) j["drain_command"] = drain_command(c);
    culprits.push_back(std::move(j));
  }
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobRun& r : s.runs) {
    nlohmann::json j = {{"job", r.job},
                        {"report", r.path},
                        {"verdict", r.verdict},
                        {"findings", r.finding_kinds},
                        {"nodes", r.nodes},
                        {"gpus", r.gpu_count()},
                        {"run_s", r.run_seconds()},
                        {"gpu_hours", static_cast<double>(r.gpu_count()) * r.run_seconds() / 3600},
                        {"gpu_util_pct", optional_number(r.gpu_util_pct)},
                        {"mem_util_pct", optional_number(r.mem_util_pct)},
                        {"accounting", r.sacct.has_value()}};
    if (!r.step.empty()) j["step"] = r.step;
    if (r.sacct) {
      j["partition"] = r.sacct->partition;
      j["user"] = r.sacct->user;
      j["state"] = r.sacct->state;
      j["wait_s"] = optional_number(r.sacct->wait_s());
    }
    jobs.push_back(std::move(j));
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const Group& g : s.groups) {
    groups.push_back({{"by", g.by},
                      {"name", g.name},
                      {"jobs", g.jobs},
                      {"wait_s", cdf_of(g.wait_s)},
                      {"run_s", cdf_of(g.run_s)},
                      {"gpu_hours", cdf_of(g.gpu_hours)},
                      {"gpu_util_pct", cdf_of(g.gpu_util_pct)},
                      {"mem_util_pct", cdf_of(g.mem_util_pct)}});
  }
  return {{"schema", "ringside.fleet/1"},
          {"jobs_read", s.runs.size()},
          {"drain_after", s.drain_after},
          {"gpu_hours", s.gpu_hours},
          {"gpu_hours_lost", s.gpu_hours_lost},
          {"culprits", culprits},
          {"jobs", jobs},
          {"groups", groups},
          {"warnings", s.warnings}};
}

void render_fleet_text(const FleetSummary& s, size_t top, std::ostream& out) {
  out << "ringside fleet: " << count_text(static_cast<int64_t>(s.runs.size()), "job") << ", "
      << fmt("%.2f", s.gpu_hours) << " GPU-hours, " << fmt("%.2f", s.gpu_hours_lost)
      << " of them lost to hardware findings\n";
  for (const std::string& w : s.warnings) out << "warning: " << printable(w) << "\n";
  if (s.culprits.empty()) {
    out << "\nno node, GPU or link was blamed in any job\n";
  } else {
    out << "\nrepeat offenders (jobs blamed / jobs run on it, GPU-hours lost):\n";
    size_t shown = 0;
    for (const Culprit& c : s.culprits) {
      if (shown++ == top) {
        out << "  ... " << s.culprits.size() - top << " more (--top, or --json)\n";
        break;
      }
      std::string kinds;
      for (const auto& [k, n] : c.kinds)
        kinds += (kinds.empty() ? "" : ", ") + k + (n > 1 ? " x" + std::to_string(n) : "");
      std::string jobs;
      for (size_t i = 0; i < c.jobs.size() && i < 8; ++i) jobs += (i ? "," : "") + c.jobs[i];
      if (c.jobs.size() > 8) jobs += ",...";
      out << "  " << c.what << " " << printable(c.name)
          << (c.node.empty() ? "" : " (" + printable(c.node) + ")") << ": " << c.jobs.size() << "/"
          << c.jobs_seen << " jobs, " << fmt("%.2f", c.gpu_hours_lost) << " GPU-hours; "
          << printable(kinds) << "; jobs " << printable(jobs) << "\n";
      out << "    " << printable(c.evidence) << "\n";
      if (c.drain) out << "    drain: " << printable(drain_command(c)) << "\n";
    }
  }
  out << "\njobs:\n";
  for (const JobRun& r : s.runs) {
    out << "  " << printable(r.job) << (r.step.empty() ? "" : "." + printable(r.step)) << "  "
        << printable(r.verdict) << "  " << r.gpu_count() << " GPUs, "
        << fmt("%.0f", r.run_seconds()) << " s";
    if (r.sacct) {
      if (auto w = r.sacct->wait_s()) out << ", waited " << fmt("%.0f", *w) << " s";
      out << ", " << printable(r.sacct->partition) << "/" << printable(r.sacct->user) << ", "
          << printable(r.sacct->state);
    }
    out << ", GPU util " << percent(r.gpu_util_pct) << ", memory util " << percent(r.mem_util_pct)
        << "\n";
  }
  out << "\nper partition and user (median [p5-p95] over jobs):\n";
  auto dist = [](const std::vector<double>& v, const char* format) {
    if (v.empty()) return std::string("-");
    return fmt(format, quantile_of(v, 0.5)) + " [" + fmt(format, quantile_of(v, 0.05)) + "-" +
           fmt(format, quantile_of(v, 0.95)) + "]";
  };
  for (const Group& g : s.groups) {
    out << "  " << g.by << " " << printable(g.name) << ": " << count_text(g.jobs, "job")
        << "; wait s " << dist(g.wait_s, "%.0f") << "; run s " << dist(g.run_s, "%.0f")
        << "; GPU util % " << dist(g.gpu_util_pct, "%.0f") << "; memory util % "
        << dist(g.mem_util_pct, "%.0f") << "\n";
  }
}

}  // namespace ringside::analysis::fleet
