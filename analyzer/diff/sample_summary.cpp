#include "diff/sample_summary.h"

#include <algorithm>
#include <cmath>

#include "report/quantile.h"

namespace ringside::analysis {

double SampleSummary::median_se() const {
  const double iid = count == 0 ? 0 : 1.2533 * spread / std::sqrt(static_cast<double>(count));
  return std::max(iid, batch_se);
}

SampleSummary summarize(std::vector<double> values, size_t max_sample) {
  SampleSummary s;
  s.count = values.size();
  if (values.empty()) return s;
  const size_t keep = std::min(values.size(), max_sample);
  for (size_t i = 0; i < keep; ++i) s.sample.push_back(values[i * values.size() / keep]);
  if (values.size() >= 2 * kBatches) {
    std::vector<double> medians;
    for (size_t b = 0; b < kBatches; ++b) {
      std::vector<double> part(
          values.begin() + static_cast<long>(b * values.size() / kBatches),
          values.begin() + static_cast<long>((b + 1) * values.size() / kBatches));
      std::sort(part.begin(), part.end());
      medians.push_back(quantile_sorted(part, 0.5));
    }
    double m = 0, ss = 0;
    for (double v : medians) m += v;
    m /= static_cast<double>(kBatches);
    for (double v : medians) ss += (v - m) * (v - m);
    s.batch_se = std::sqrt(ss / static_cast<double>(kBatches - 1) / static_cast<double>(kBatches));
  }
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  std::sort(values.begin(), values.end());
  s.median = quantile_sorted(values, 0.5);
  s.p10 = quantile_sorted(values, 0.1);
  s.p90 = quantile_sorted(values, 0.9);
  for (double& v : values) v = std::abs(v - s.median);
  std::sort(values.begin(), values.end());
  s.spread = 1.4826 * quantile_sorted(values, 0.5);
  return s;
}

nlohmann::json summary_to_json(const SampleSummary& s, const std::string& unit) {
  return {{"count", s.count},
          {"median_" + unit, s.median},
          {"spread_" + unit, s.spread},
          {"mean_" + unit, s.mean},
          {"p10_" + unit, s.p10},
          {"p90_" + unit, s.p90},
          {"batch_se_" + unit, s.batch_se},
          {"sample_" + unit, s.sample}};
}

Result<SampleSummary> summary_from_json(const nlohmann::json& j, const std::string& unit) {
  SampleSummary s;
  try {
    s.count = j.at("count").get<uint64_t>();
    s.median = j.at("median_" + unit).get<double>();
    s.spread = j.at("spread_" + unit).get<double>();
    s.mean = j.at("mean_" + unit).get<double>();
    s.p10 = j.at("p10_" + unit).get<double>();
    s.p90 = j.at("p90_" + unit).get<double>();
    s.sample = j.at("sample_" + unit).get<std::vector<double>>();
    s.batch_se = j.value("batch_se_" + unit, 0.0);
  } catch (const nlohmann::json::exception& e) {
    return Status::error(std::string("distribution in ") + unit + ": " + e.what());
  }
  return s;
}

}  // namespace ringside::analysis
