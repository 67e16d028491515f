// `ringside diff A B`: what changed from run A to run B of the same job shape,
// judged against each run's own spread (noise), from the `profile` of their
// reports (diff/run_profile.h).  Never re-derives findings: it compares
// measurements.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringside/status.h"

namespace ringside::analysis {

inline constexpr const char* kDiffSchema = "ringside.diff/1";
inline constexpr double kDefaultDiffThreshold = 0.05;
// A change is beyond noise when it is this many standard errors away from no
// change, or more when many things are compared (Bonferroni at 0.1% per area).
inline constexpr double kMinNoiseZ = 4.0;
inline constexpr double kFamilyAlpha = 1e-3;

struct DiffOptions {
  double threshold = kDefaultDiffThreshold;  // relative worsening that makes B a regression
  size_t max_listed = 32;                    // changes listed per area
};

struct Change {
  std::string area;  // step_time busbw rank_lateness node_lateness gpu_clock gpu_slowdown
  std::string what;  // "rank 5 (node2 -> node6)", "all_reduce 16 MiB-32 MiB on dp{0,2}"
  std::string unit;  // "s", "GB/s", "ms/op", "MHz", "fraction"
  double a = 0, b = 0;
  double noise = 0;     // one standard error of b - a
  double z = 0;         // (b - a) / noise; 0 when there is no noise and no change
  double relative = 0;  // how much worse B is, as a fraction of A's scale (< 0: better)
  bool exceeds_threshold = false;
};

struct DiffRun {
  std::string source;  // the path given
  std::string job;
  int64_t ranks = 0;
  std::vector<std::string> nodes;
};

struct DiffResult {
  DiffRun a, b;
  double threshold = 0;
  std::vector<std::pair<std::string, size_t>> compared;  // area -> things compared
  std::vector<Change> worse, better;                     // beyond noise, largest first
  size_t worse_total = 0, better_total = 0;
  std::vector<std::string> notes;  // what could not be compared, and why
  bool regressed() const;          // something got worse beyond noise and beyond the threshold
};

// Errors: a report without a profile, or runs of different shapes (rank count,
// ranks per node, communicator layout), naming the difference.
Result<DiffResult> diff_reports(const nlohmann::json& a, const nlohmann::json& b,
                                const DiffOptions& options);

// z beyond which one of `compared` changes is beyond noise.
double noise_z(size_t compared);

nlohmann::json diff_to_json(const DiffResult& d);
std::string diff_to_text(const DiffResult& d);

}  // namespace ringside::analysis
