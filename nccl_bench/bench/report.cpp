#include "bench/report.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/errors.h"

namespace ringside::bench {

std::string format_float(double value, int width) {
  char buf[64];
  for (const char* fmt : {"%*.2f", "%*.1f", "%*.0f"}) {
    const int n = std::snprintf(buf, sizeof buf, fmt, width, value);
    if (n <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

Report::Report(const BenchOptions& options, const World& world)
    : o_(options), world_(world), printing_(world.is_root_process()) {}

std::string test_name(const Collective& c) {
  return std::string(c.name) + "_perf";
}

namespace {

// -S: local time, as nccl-tests prints it.
constexpr const char* kTimestampFormat = "%Y-%m-%d %H:%M:%S";

std::string timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, kTimestampFormat, &local);
  return buf;
}

}  // namespace

void Report::header() const {
  if (!printing_) return;
  int lib = 0;
  ncclGetVersion(&lib);
  // nccl-tests' header lines, field for field (docs/nccl_bench.md#output).
  std::printf("# nccl_bench version %s nccl-headers=%d nccl-library=%d\n", RINGSIDE_VERSION,
              NCCL_VERSION_CODE, lib);
  std::printf("# Collective test starting: %s\n", test_name(*o_.collective).c_str());
  const bool factor = o_.step_factor > 1;
  std::printf(
      "# nThread %d nGpus %d minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d unalign: %d\n",
      o_.threads, o_.gpus_per_process, static_cast<unsigned long long>(o_.min_bytes),
      static_cast<unsigned long long>(o_.max_bytes),
      static_cast<unsigned long long>(factor ? o_.step_factor : o_.step_bytes),
      factor ? "factor" : "bytes", o_.warmup_iters, o_.iters, o_.agg_iters, o_.check_iters,
      o_.graph_launches, 0);
  if (o_.blocking == 1) {
    std::printf("# Blocking Enabled: wait and barrier after each operation (-m) \n");
  }
  if (o_.blocking == 2)
    std::printf("# Blocking Enabled: wait after each operation (-m), no barrier \n");
  if (o_.blocking == 3) {
    std::printf(
        "# Blocking Enabled: wait and barrier after each iteration (-n); the time leaves "
        "out the barrier \n");
  }
  if (o_.per_iter_timing) {
    std::printf("# Per-Iteration Report: CUDA event times; i_* columns take the slowest process");
    if (o_.per_iter_skip > 0) std::printf("; the first %d iterations left out", o_.per_iter_skip);
    std::printf(" \n");
  }
  if (o_.parallel_init) {
    std::printf("# Parallel Init Enabled: each thread creates its communicators concurrently \n");
  }
  std::printf("#\n# Using devices\n");
  for (const RankInfo& r : world_.rank_infos()) {
    std::string bus = r.bus_id;
    if (const auto dot = bus.rfind('.'); dot != std::string::npos) bus.resize(dot);
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", r.rank, 0, r.pid,
                r.hostname, r.device, bus.c_str(), r.gpu_name);
  }
  std::printf("#\n");
  // Two header lines of column names and units; -I adds four columns per placement
  // and -S a last one.  Every line ends with the (maybe empty) timestamp column.
  const int ts_width = o_.report_timestamps ? 19 : 0;
  const char* ts_name = o_.report_timestamps ? "timestamp" : "";
  const char* ts_unit = o_.report_timestamps ? kTimestampFormat : "";
  const char* lead = "# %10s  %12s  %8s  %6s  %6s";
  std::printf(lead, "", "", "", "", "");
  if (o_.per_iter_timing) {
    std::printf("%14s%s%32s%s\n", "", "out-of-place (+ per-iteration)", "",
                "in-place (+ per-iteration)");
  } else {
    std::printf("           out-of-place                       in-place          \n");
  }
  for (const bool units : {false, true}) {
    std::printf(lead, units ? "(B)" : "size", units ? "(elements)" : "count", units ? "" : "type",
                units ? "" : "redop", units ? "" : "root");
    for (int placement = 0; placement < 2; ++placement) {
      std::printf("  %7s  %6s  %6s  %6s", units ? "(us)" : "time", units ? "(GB/s)" : "algbw",
                  units ? "(GB/s)" : "busbw", units ? "" : "#wrong");
      if (o_.per_iter_timing) {
        std::printf("  %7s  %7s  %7s  %7s", units ? "(us)" : "i_min", units ? "(us)" : "i_max",
                    units ? "(us)" : "i_p99", units ? "(%)" : "i_cv%");
      }
    }
    std::printf(" %*s\n", ts_width, units ? ts_unit : ts_name);
  }
  std::fflush(stdout);
}

void Report::row_start(const ResultRow& row) const {
  if (!printing_) return;
  std::printf("%12llu  %12llu  %8s  %6s  %6d", static_cast<unsigned long long>(row.size),
              static_cast<unsigned long long>(row.count), row.type.c_str(), row.redop.c_str(),
              row.root);
  std::fflush(stdout);
}

void Report::measurement(const Measurement& m) const {
  if (!printing_) return;
  const std::string t = format_float(m.time_us, 7);
  const std::string a = format_float(m.alg_gbps, 6);
  const std::string b = format_float(m.bus_gbps, 6);
  if (m.checked) {
    std::printf("  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), b.c_str(),
                static_cast<double>(m.wrong));
  } else {
    std::printf("  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
  }
  if (m.iterations) {
    const IterStats& st = *m.iterations;
    std::printf("  %7s  %7s  %7s  %7s", format_float(st.min_us, 7).c_str(),
                format_float(st.max_us, 7).c_str(), format_float(st.p99_us, 7).c_str(),
                format_float(st.cv_pct, 7).c_str());
  }
  std::fflush(stdout);
}

void Report::row_end() const {
  if (!printing_) return;
  if (o_.report_timestamps) std::printf("%21s", timestamp_now().c_str());
  std::printf("\n");
  std::fflush(stdout);
}

void Report::footer(const Summary& s) const {
  if (!printing_) return;
  std::printf("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(s.wrong_total),
              s.wrong_total ? "FAILED" : "OK");
  const char* verdict = !o_.min_busbw ? "" : (s.bandwidth_ok ? "OK" : "FAILED");
  std::printf("# %-20s : %g %s\n", "Avg bus bandwidth", s.avg_bus_gbps, verdict);
  if (o_.min_busbw) std::printf("# %-20s : %g\n", "Min bus bandwidth", *o_.min_busbw);
  std::printf("#\n# Collective test concluded: %s\n#\n\n", test_name(*o_.collective).c_str());
  std::fflush(stdout);
}

std::string Report::config_json() const {
  nlohmann::json c;
  c["collective"] = o_.collective->name;
  c["command_line"] = o_.command_line;
  c["nthreads"] = o_.threads;
  c["ngpus"] = o_.gpus_per_process;
  c["minimum_bytes"] = o_.min_bytes;
  c["maximum_bytes"] = o_.max_bytes;
  if (o_.step_factor > 1) {
    c["step_factor"] = o_.step_factor;
  } else {
    c["step_bytes"] = o_.step_bytes;
  }
  c["warmup_iters"] = o_.warmup_iters;
  c["iterations"] = o_.iters;
  c["aggregated_iterations"] = o_.agg_iters;
  c["validation"] = o_.check_iters;
  c["graph"] = o_.graph_launches;
  c["blocking"] = o_.blocking;
  c["run_cycles"] = o_.run_cycles;
  c["per_iter_timing"] = o_.per_iter_timing;
  c["per_iter_skip"] = o_.per_iter_skip;
  c["report_timestamps"] = o_.report_timestamps;
  c["parallel_init"] = o_.parallel_init;
  c["average"] = o_.average;
  c["nranks"] = world_.nranks();
  c["timeout_seconds"] = o_.world.timeout_seconds;
  if (o_.min_busbw) c["min_busbw"] = *o_.min_busbw;
  return c.dump();
}

namespace {
nlohmann::json measurement_json(const Measurement& m) {
  nlohmann::json j;
  j["time_us"] = m.time_us;
  j["alg_bw"] = m.alg_gbps;
  j["bus_bw"] = m.bus_gbps;
  j["nwrong"] = m.checked ? nlohmann::json(m.wrong) : nlohmann::json(nullptr);
  if (m.iterations) {
    j["per_iter"] = {{"min_us", m.iterations->min_us},
                     {"max_us", m.iterations->max_us},
                     {"p99_us", m.iterations->p99_us},
                     {"cv_pct", m.iterations->cv_pct}};
  }
  return j;
}
}  // namespace

void Report::write_json(const Summary& s) const {
  if (!printing_ || o_.json_file.empty()) return;
  nlohmann::json j;
  j["schema"] = "ringside.nccl_bench/1";
  j["config"] = nlohmann::json::parse(config_json());
  j["job_id"] = world_.job_id();
  nlohmann::json devices = nlohmann::json::array();
  for (const RankInfo& r : world_.rank_infos()) {
    devices.push_back({{"rank", r.rank},
                       {"node", r.node},
                       {"hostname", r.hostname},
                       {"pid", r.pid},
                       {"device", r.device},
                       {"bus_id", r.bus_id},
                       {"gpu", r.gpu_name},
                       {"uuid", r.gpu_uuid}});
  }
  j["devices"] = devices;
  nlohmann::json rows = nlohmann::json::array();
  for (const ResultRow& r : s.rows) {
    rows.push_back({{"size", r.size},
                    {"count", r.count},
                    {"type", r.type},
                    {"redop", r.redop},
                    {"root", r.root},
                    {"out_of_place", measurement_json(r.out_of_place)},
                    {"in_place", measurement_json(r.in_place)}});
  }
  j["results"] = rows;
  j["out_of_bounds"] = {{"count", s.wrong_total}, {"okay", s.wrong_total == 0}};
  j["average_bus_bandwidth"] = {
      {"bandwidth", s.avg_bus_gbps},
      {"minimum", o_.min_busbw ? nlohmann::json(*o_.min_busbw) : nlohmann::json(nullptr)},
      {"okay", s.bandwidth_ok}};
  j["exit_code"] = s.exit_code;
  std::ofstream out(o_.json_file, std::ios::trunc);
  out << j.dump(2) << "\n";
  if (!out) throw RuntimeError("cannot write --json file '" + o_.json_file + "'");
}

}  // namespace ringside::bench
