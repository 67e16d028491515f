// A distribution kept small: count, centre, spread and an even sample of at
// most kProfileSample values.  The spread is robust (1.4826 x the median
// absolute deviation: the standard deviation for normal noise, unmoved by a few
// outliers), so that one slow step or op does not widen what counts as noise.
//
// Values in a run are not independent: a run drifts (warm-up, other load on the
// machine).  The standard error of the median is therefore also measured by
// batch medians: the values in order cut into kBatches runs of their own, whose
// medians' spread over sqrt(kBatches) holds the drift; the larger of the two is used.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ringside/status.h"

namespace ringside::analysis {

inline constexpr size_t kBatches = 8;

struct SampleSummary {
  uint64_t count = 0;
  double median = 0;
  double spread = 0;  // 1.4826 x MAD
  double mean = 0;
  double p10 = 0, p90 = 0;
  std::vector<double> sample;  // evenly spaced over the values, in their order
  double batch_se = 0;         // from batch medians; 0 with fewer than 2 x kBatches values

  // Standard error of the median: the larger of the independent-noise one
  // (1.2533 sigma / sqrt(n)) and batch_se.
  double median_se() const;
};

// `values` in the order they happened; `max_sample` bounds the kept sample.
SampleSummary summarize(std::vector<double> values, size_t max_sample);

// Written with `unit` appended to the field names ("median_s", "sample_gbps").
nlohmann::json summary_to_json(const SampleSummary& s, const std::string& unit);
// Reads what summary_to_json wrote; the error names the missing field.
Result<SampleSummary> summary_from_json(const nlohmann::json& j, const std::string& unit);

}  // namespace ringside::analysis
