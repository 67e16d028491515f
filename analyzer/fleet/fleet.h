// `ringside fleet`: many jobs' reports (and their Slurm accounting) joined into
// which nodes, GPUs and links keep being the culprit, what they cost, and how
// the jobs used their GPUs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fleet/accounting.h"
#include "ringside/status.h"

namespace ringside::analysis::fleet {

// One finding of a report that blames hardware.
struct Blame {
  std::string kind, subkind;
  std::vector<std::string> nodes;
  std::string gpu_uuid;  // when the finding names the GPU
  double cost_s = 0;     // seconds it cost each rank (hangs: how long they waited)
  std::string evidence;
};

// One job run as its report tells it.
struct JobRun {
  std::string path;  // the report file
  std::string job, step;
  std::string verdict;
  std::vector<std::string> nodes;
  std::vector<std::string> finding_kinds;  // every finding, "kind/subkind"
  std::vector<Blame> blames;
  int64_t gpus = 0;
  double seconds = 0;
  std::optional<double> gpu_util_pct, mem_util_pct;  // mean over its GPUs
  std::optional<SacctJob> sacct;
  // GPUs and run time: accounting's when known, else the report's.
  int64_t gpu_count() const;
  double run_seconds() const;
};

// Reads every report JSON (schema ringside.report/1) in `paths` (files, or
// directories searched recursively; other JSON files are skipped).  Unreadable
// or malformed reports are errors naming the file; `warnings` gets the skipped
// files and duplicate reports of one job step (the first by path is kept).
Status load_reports(const std::vector<std::string>& paths, std::vector<JobRun>* runs,
                    std::vector<std::string>* warnings);

// A node, GPU or node pair and the jobs it was blamed in.
struct Culprit {
  std::string what;               // "node", "gpu" or "link"
  std::string name;               // node name, GPU UUID, "nodeA<->nodeB"
  std::string node;               // the GPU's node, or empty
  std::vector<std::string> jobs;  // distinct job ids it was blamed in
  int64_t jobs_seen = 0;          // jobs that ran on it (both nodes for a link)
  int64_t findings = 0;
  double gpu_hours_lost = 0;             // sum of cost_s x the job's GPUs
  std::map<std::string, int64_t> kinds;  // "kind/subkind" -> findings
  std::string evidence;                  // the costliest finding's
  bool drain = false;                    // nodes only: blamed in at least drain_after jobs
};

// Per-partition or per-user distributions over jobs.
struct Group {
  std::string by, name;  // by: "partition" or "user"
  int64_t jobs = 0;
  std::vector<double> wait_s, run_s, gpu_util_pct, mem_util_pct, gpu_hours;
};

struct FleetSummary {
  std::vector<JobRun> runs;
  std::vector<Culprit> culprits;  // most jobs blamed first, then most GPU-hours
  std::vector<Group> groups;
  int64_t drain_after = 2;
  double gpu_hours = 0, gpu_hours_lost = 0;
  std::vector<std::string> warnings;
};

FleetSummary summarize_fleet(std::vector<JobRun> runs, int64_t drain_after);

}  // namespace ringside::analysis::fleet
