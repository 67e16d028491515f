// The nccl-tests table (header, one line per size, footer) on stdout of rank 0,
// and the same results as JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/options.h"
#include "core/world.h"

namespace ringside::bench {

// -I's summary of one measurement's iterations.
struct IterStats {
  double min_us = 0;
  double max_us = 0;
  double p99_us = 0;
  double cv_pct = 0;  // standard deviation over the mean
};

struct Measurement {
  double time_us = 0;
  double alg_gbps = 0;
  double bus_gbps = 0;
  int64_t wrong = 0;
  bool checked = false;                 // false prints N/A
  std::optional<IterStats> iterations;  // -I
};

struct ResultRow {
  uint64_t size = 0;   // bytes, nccl-tests' size column
  uint64_t count = 0;  // elements passed to NCCL
  std::string type;
  std::string redop;  // "none" when the collective shows no op (Collective::op_rows)
  int root = -1;
  Measurement out_of_place;
  Measurement in_place;
};

struct Summary {
  std::vector<ResultRow> rows;
  int64_t wrong_total = 0;
  double avg_bus_gbps = 0;
  bool bandwidth_ok = true;
  int exit_code = 0;
};

class Report {
 public:
  Report(const BenchOptions& options, const World& world);
  void header() const;
  void row_start(const ResultRow& row) const;
  void measurement(const Measurement& m) const;
  void row_end() const;
  void footer(const Summary& s) const;
  // Writes --json (rank 0); throws RuntimeError when the file cannot be written.
  void write_json(const Summary& s) const;
  std::string config_json() const;

 private:
  const BenchOptions& o_;
  const World& world_;
  bool printing_;
};

// nccl-tests' name of the test, e.g. "all_reduce_perf" (also the drop-in's program name).
std::string test_name(const Collective& c);

// nccl-tests' number formatting: fixed width, 2, 1 or 0 decimals, else exponent.
std::string format_float(double value, int width);

}  // namespace ringside::bench
