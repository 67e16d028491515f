#include "bench/report.h"

#include <cstdio>
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

void Report::header() const {
  if (!printing_) return;
  int lib = 0;
  ncclGetVersion(&lib);
  std::printf("# nccl_bench (ringside %s) nccl-headers=%d nccl-library=%d\n", RINGSIDE_VERSION,
              NCCL_VERSION_CODE, lib);
  std::printf("# Collective test starting: %s\n", o_.collective->name);
  const bool factor = o_.step_factor > 1;
  std::printf(
      "# nThread %d nGpus %d minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d\n",
      o_.threads, o_.gpus_per_process, static_cast<unsigned long long>(o_.min_bytes),
      static_cast<unsigned long long>(o_.max_bytes),
      static_cast<unsigned long long>(factor ? o_.step_factor : o_.step_bytes),
      factor ? "factor" : "bytes", o_.warmup_iters, o_.iters, o_.agg_iters, o_.check_iters,
      o_.graph_launches);
  if (o_.blocking == 1) std::printf("# Blocking Enabled: wait and barrier after each operation\n");
  if (o_.blocking == 2) std::printf("# Blocking Enabled: wait after each operation, no barrier\n");
  if (o_.blocking == 3) {
    std::printf(
        "# Blocking Enabled: wait and barrier after each iteration; time excludes barrier\n");
  }
  std::printf("#\n# Using devices\n");
  for (const RankInfo& r : world_.rank_infos()) {
    std::string bus = r.bus_id;
    if (const auto dot = bus.rfind('.'); dot != std::string::npos) bus.resize(dot);
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", r.rank, 0, r.pid,
                r.hostname, r.device, bus.c_str(), r.gpu_name);
  }
  std::printf("#\n");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "\n",
      "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
              "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "");
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
  std::fflush(stdout);
}

void Report::row_end() const {
  if (!printing_) return;
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
  std::printf("#\n# Collective test concluded: %s\n", o_.collective->name);
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
