#include "load/gpu_summary.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ringside::analysis {

GpuSummary summarize_samples(std::span<const trace::SampleRecord> samples) {
  GpuSummary g;
  std::vector<uint32_t> clocks;
  bool first_ecc = true, first_rows = true, first_pcie = true;
  for (const auto& s : samples) {
    ++g.samples;
    if (s.valid & trace::kValidClocks) {
      clocks.push_back(s.sm_clock_mhz);
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
      if (first_ecc) {
        g.ecc_uncorrected_first = s.ecc_uncorrected;
        g.ecc_corrected_first = s.ecc_corrected;
        first_ecc = false;
      }
      g.ecc_uncorrected_last = s.ecc_uncorrected;
      g.ecc_corrected_last = s.ecc_corrected;
    }
    if (s.valid & trace::kValidRemappedRows) {
      if (first_rows) g.remapped_first = s.remapped_rows;
      first_rows = false;
      g.remapped_last = s.remapped_rows;
    }
    if (s.valid & trace::kValidPcieReplays) {
      if (first_pcie) g.pcie_replays_first = s.pcie_replays;
      first_pcie = false;
      g.pcie_replays_last = s.pcie_replays;
    }
  }
  if (!clocks.empty()) {
    std::nth_element(clocks.begin(), clocks.begin() + static_cast<long>(clocks.size() / 2),
                     clocks.end());
    g.median_sm_clock_mhz = clocks[clocks.size() / 2];
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
