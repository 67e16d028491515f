#include "load/gpu_summary.h"

#include <algorithm>
#include <string>
#include <vector>

#include <cmath>
#include <limits>

namespace ringside::analysis {

std::vector<GpuPoint> gpu_series(std::span<const trace::SampleRecord> samples) {
  std::vector<GpuPoint> out;
  const size_t n = samples.size();
  const size_t points = std::min(n, kGpuSeriesPoints);
  for (size_t p = 0; p < points; ++p) {
    const size_t begin = p * n / points, end = (p + 1) * n / points;
    double sum[4] = {0, 0, 0, 0};
    int count[4] = {0, 0, 0, 0};
    for (size_t i = begin; i < end; ++i) {
      const auto& s = samples[i];
      const std::pair<uint32_t, double> fields[4] = {{trace::kValidClocks, s.sm_clock_mhz},
                                                     {trace::kValidTemperature, s.temperature_c},
                                                     {trace::kValidPower, s.power_mw / 1e3},
                                                     {trace::kValidUtilization, s.util_gpu_pct}};
      for (int f = 0; f < 4; ++f) {
        if (s.valid & fields[f].first) {
          sum[f] += fields[f].second;
          ++count[f];
        }
      }
    }
    auto mean = [&](int f) {
      return count[f] ? static_cast<float>(sum[f] / count[f])
                      : std::numeric_limits<float>::quiet_NaN();
    };
    out.push_back({samples[(begin + end) / 2].t_ns, mean(0), mean(1), mean(2), mean(3)});
  }
  return out;
}

GpuSummary summarize_samples(std::span<const trace::SampleRecord> samples) {
  GpuSummaryBuilder builder;
  builder.add(samples);
  GpuSummary g = builder.summary();
  g.series = gpu_series(samples);
  return g;
}

void GpuSummaryBuilder::add(std::span<const trace::SampleRecord> samples) {
  GpuSummary& g = g_;
  for (const auto& s : samples) {
    ++g.samples;
    if (s.valid & trace::kValidClocks) {
      ++clocks_[s.sm_clock_mhz];
      ++clock_count_;
      g.max_sm_clock_mhz = std::max(g.max_sm_clock_mhz, s.sm_clock_mhz);
    }
    if (s.valid & trace::kValidClockReasons) {
      ++g.clock_samples;
      if (s.clock_event_reasons & kSlowdownReasons) {
        ++g.slowdown_samples;
        g.slowdown_reasons |= s.clock_event_reasons & kSlowdownReasons;
        if (g.first_slowdown_ns < 0) g.first_slowdown_ns = s.t_ns;
      }
    }
    if (s.valid & trace::kValidUtilization) {
      ++g.util_samples;
      g.util_gpu_sum_pct += s.util_gpu_pct;
      g.util_mem_sum_pct += s.util_mem_pct;
    }
    if (s.valid & trace::kValidMemory)
      g.mem_used_max_bytes = std::max(g.mem_used_max_bytes, s.mem_used_bytes);
    if (s.valid & trace::kValidTemperature)
      g.max_temperature_c = std::max(g.max_temperature_c, s.temperature_c);
    if (s.valid & trace::kValidEcc) {
      if (first_ecc_) {
        g.ecc_uncorrected_first = s.ecc_uncorrected;
        g.ecc_corrected_first = s.ecc_corrected;
        first_ecc_ = false;
      }
      g.ecc_uncorrected_last = s.ecc_uncorrected;
      g.ecc_corrected_last = s.ecc_corrected;
    }
    if (s.valid & trace::kValidRemappedRows) {
      if (first_rows_) g.remapped_first = s.remapped_rows;
      first_rows_ = false;
      g.remapped_last = s.remapped_rows;
    }
    if (s.valid & trace::kValidPcieReplays) {
      if (first_pcie_) g.pcie_replays_first = s.pcie_replays;
      first_pcie_ = false;
      g.pcie_replays_last = s.pcie_replays;
    }
  }
}

GpuSummary GpuSummaryBuilder::summary() const {
  GpuSummary g = g_;
  // The (count / 2)-th smallest reading, counted from 0.
  uint64_t below = 0;
  for (const auto& [mhz, n] : clocks_) {
    below += n;
    if (below > clock_count_ / 2) {
      g.median_sm_clock_mhz = mhz;
      break;
    }
  }
  return g;
}

std::string slowdown_reason_names(uint64_t reasons) {
  static const std::pair<uint64_t, const char*> kNames[] = {{0x4, "SW power cap"},
                                                            {0x8, "HW slowdown"},
                                                            {0x20, "SW thermal slowdown"},
                                                            {0x40, "HW thermal slowdown"},
                                                            {0x80, "HW power brake"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (reasons & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

}  // namespace ringside::analysis
