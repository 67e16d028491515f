// One rank's GPU counters reduced to what the detectors need, so that the
// samples themselves are never kept.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ringside/trace_schema.h"

namespace ringside::analysis {

// NVML clock-event reasons that mean the GPU was slowed down (not idle, not
// an application clock setting).
inline constexpr uint64_t kSlowdownReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

// At most this many points of a GPU's counters are kept (GpuSummary::series), for
// the report's sparklines.
inline constexpr size_t kGpuSeriesPoints = 24;

// Counters averaged over consecutive samples; NaN where none of them read it.
struct GpuPoint {
  int64_t t_ns = 0;  // trace-local time of the middle sample
  float sm_clock_mhz = 0, temperature_c = 0, power_w = 0, util_gpu_pct = 0;
};

struct GpuSummary {
  uint64_t samples = 0;
  uint64_t clock_samples = 0;
  uint64_t slowdown_samples = 0;  // samples with a slowdown reason set
  uint64_t slowdown_reasons = 0;  // union of the slowdown bits seen
  double median_sm_clock_mhz = 0;
  uint32_t max_sm_clock_mhz = 0;
  uint32_t max_temperature_c = 0;
  uint64_t ecc_uncorrected_first = 0, ecc_uncorrected_last = 0;
  uint64_t ecc_corrected_first = 0, ecc_corrected_last = 0;
  uint32_t remapped_first = 0, remapped_last = 0;
  uint32_t pcie_replays_first = 0, pcie_replays_last = 0;
  int64_t first_slowdown_ns = -1;  // trace-local time of the first slowed sample
  // Utilization over the samples that read it (NVML: share of time a kernel ran,
  // share of time device memory was read or written), and the most memory used.
  uint64_t util_samples = 0;
  double util_gpu_sum_pct = 0, util_mem_sum_pct = 0;
  uint64_t mem_used_max_bytes = 0;
  // The samples in at most kGpuSeriesPoints runs of consecutive samples of equal
  // count, averaged: bounded whatever the job's length.
  std::vector<GpuPoint> series;

  double mean_util_gpu_pct() const {
    return util_samples ? util_gpu_sum_pct / static_cast<double>(util_samples) : 0;
  }
  double mean_util_mem_pct() const {
    return util_samples ? util_mem_sum_pct / static_cast<double>(util_samples) : 0;
  }
  double slowdown_fraction() const {
    return clock_samples
               ? static_cast<double>(slowdown_samples) / static_cast<double>(clock_samples)
               : 0;
  }
};

GpuSummary summarize_samples(std::span<const trace::SampleRecord> samples);
// GpuSummary::series of these samples.
std::vector<GpuPoint> gpu_series(std::span<const trace::SampleRecord> samples);

// The same summary built from samples added batch by batch (`ringside watch` reads
// only the rows appended since its last poll), in memory that does not grow with
// the samples: SM clocks are counted per value for the median.  Its `series` stays
// empty (it is drawn by the HTML report only, never live).
class GpuSummaryBuilder {
 public:
  void add(std::span<const trace::SampleRecord> samples);
  GpuSummary summary() const;

 private:
  GpuSummary g_;
  std::map<uint32_t, uint64_t> clocks_;  // SM clock (MHz) -> samples
  uint64_t clock_count_ = 0;
  bool first_ecc_ = true, first_rows_ = true, first_pcie_ = true;
};
// "HW thermal slowdown, SW thermal slowdown"
std::string slowdown_reason_names(uint64_t reasons);

}  // namespace ringside::analysis
