// The analysis result: what `--json` writes (schema "ringside.report/1", see
// docs/report-format.md) and what the terminal summary renders.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock/clock_align.h"
#include "match/link_matrix.h"

namespace ringside::analysis {

inline constexpr const char* kReportSchema = "ringside.report/1";

// Ranks held up by a root cause (a hang's victims): where they wait.  Folded
// under the root; never a finding of their own.
struct Consequence {
  std::vector<int64_t> ranks;
  std::optional<uint64_t> comm;
  std::string comm_label;
  std::optional<uint64_t> seq;
  std::string op;       // "all_reduce", "send", ...
  double waited_s = 0;  // the longest wait among these ranks
};

struct Finding {
  std::string kind;     // straggler imbalance slow_link hang desync gpu_health missing_trace
  std::string subkind;  // hangs: missing_rank all_stuck gpu_stall dead_rank; others: detail
  std::vector<int64_t> ranks;
  std::vector<std::string> nodes;
  std::optional<uint64_t> comm;  // comm id
  std::string comm_label;
  std::optional<uint64_t> seq;
  std::string comm_role;              // "tp", "pp", "dp", "world" or "" (match/comm_roles.h)
  std::vector<int64_t> comm_members;  // global ranks of the comm, where relevant
  double severity = 0;                // [0,1]
  double confidence = 0;              // [0,1]
  std::string evidence;               // one or two sentences
  double cost_s = 0;                  // time it cost the job (what-if), 0 if not a slowdown
  std::string next_command;
  std::vector<Consequence> consequences;            // hangs and desyncs: who waits on this root
  nlohmann::json extra = nlohmann::json::object();  // kind-specific fields
};

// Whether some finding stopped the job, a hang or a desync: the verdict is then "hung".
inline bool any_stopped_the_job(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.kind == "hang" || f.kind == "desync") return true;
  }
  return false;
}

struct CauseSaving {
  size_t finding = 0;  // index into findings
  std::string cause;   // "straggler rank 5"
  double saved_s = 0;
  double fraction = 0;  // of the actual time
};

struct RankSaving {
  int64_t rank = 0;
  double saved_s = 0;
};

struct WhatIf {
  double actual_s = 0;
  double ideal_s = 0;
  std::vector<CauseSaving> per_cause;
  std::vector<RankSaving> per_rank;
};

struct Report {
  std::string job;
  std::string step;  // Slurm job step of the traces, "" if none
  std::string dir;
  int64_t ranks = 0;
  std::vector<std::string> nodes;
  std::string verdict = "healthy";  // healthy | degraded | hung
  std::vector<Finding> findings;    // ranked by impact (hangs first, then time cost)
  WhatIf what_if;
  ClockAlignment clock;
  LinkSummary links;
  // Slow links that cost the job less than the reporting bar (--min-cost): not
  // findings (the verdict does not rest on them), but named, with their evidence.
  std::vector<Finding> links_below_cost;
  std::vector<std::string> warnings;
  std::vector<int64_t> missing_ranks;
  bool simulated = false;
  uint64_t records = 0;
  double analysis_seconds = 0;
  nlohmann::json extra = nlohmann::json::object();  // diagnostics (top late ranks ...)
};

// Sorts findings by impact and sets the verdict.
void rank_findings_and_set_verdict(Report& report);
// 0 healthy, 1 findings.
int exit_code(const Report& report);

}  // namespace ringside::analysis
