#include "report/report.h"

#include <algorithm>

namespace ringside::analysis {
namespace {

int kind_order(const Finding& f) {
  // Hangs and desyncs stop the job: they outrank any slowdown.
  if (f.kind == "desync") return 0;
  if (f.kind == "hang") return 1;
  if (f.kind == "abnormal_end") return 2;
  return 3;
}

size_t blocked(const Finding& f) {
  size_t n = 0;
  for (const auto& c : f.consequences) n += c.ranks.size();
  return n;
}

}  // namespace

void rank_findings_and_set_verdict(Report& report) {
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     if (kind_order(a) != kind_order(b)) return kind_order(a) < kind_order(b);
                     // Among causes that stop the job, the one that holds up the most ranks.
                     if (kind_order(a) < 2 && blocked(a) != blocked(b))
                       return blocked(a) > blocked(b);
                     if (a.cost_s != b.cost_s) return a.cost_s > b.cost_s;
                     return a.severity > b.severity;
                   });
  report.verdict = any_stopped_the_job(report.findings) ? "hung"
                   : report.findings.empty()            ? "healthy"
                                                        : "degraded";
}

int exit_code(const Report& report) {
  return report.findings.empty() ? 0 : 1;
}

}  // namespace ringside::analysis
