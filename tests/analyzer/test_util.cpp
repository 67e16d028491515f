#include "test_util.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "synth/synth_writer.h"

namespace ringside::analysis::test {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& name) {
  path_ = (fs::temp_directory_path() /
           ("ringside-analyzer-test-" + name + "-" + std::to_string(::getpid())))
              .string();
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

synth::SynthSpec small_spec(const std::string& dir, uint64_t seed) {
  synth::SynthSpec s;
  s.out_dir = dir;
  s.ranks = 8;
  s.nodes = 2;
  s.steps = 40;
  s.seed = seed;
  s.clock_offset_ms = 20;
  return s;
}

Report synth_and_analyze(synth::SynthSpec spec, const std::vector<std::string>& faults) {
  for (const auto& f : faults) {
    auto parsed = synth::parse_fault(f);
    EXPECT_TRUE(parsed.ok()) << parsed.message();
    if (parsed.ok()) spec.faults.push_back(parsed.value());
  }
  auto written = synth::write_synth_traces(spec);
  EXPECT_TRUE(written.ok()) << written.message();
  AnalyzeOptions options;
  options.progress = false;
  auto report = analyze_directory(spec.out_dir, options);
  EXPECT_TRUE(report.ok()) << report.message();
  return report.ok() ? report.value() : Report{};
}

CliResult run_cli(const std::vector<std::string>& args) {
  TempDir tmp("cli-out");
  std::string cmd = RINGSIDE_BIN;
  for (const auto& a : args) cmd += " '" + a + "'";
  const std::string out = tmp.path() + "/out", err = tmp.path() + "/err";
  cmd += " >" + out + " 2>" + err;
  CliResult r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

const Finding* find_kind(const Report& r, const std::string& kind, const std::string& subkind) {
  for (const auto& f : r.findings) {
    if (f.kind == kind && (subkind.empty() || f.subkind == subkind)) return &f;
  }
  return nullptr;
}

std::vector<const Finding*> slow_links(const Report& r) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings) {
    if (f.kind == "slow_link") out.push_back(&f);
  }
  for (const Finding& f : r.links_below_cost) out.push_back(&f);
  return out;
}

trace::OpRecord hand_op(trace::OpKind kind, uint64_t comm, uint64_t seq, int64_t start,
                        int64_t end) {
  trace::OpRecord r{};
  r.t_enter_ns = start - 30'000;
  r.t_exit_ns = start - 20'000;
  r.t_dev_start_ns = start;
  r.t_dev_end_ns = end;
  r.comm_id = comm;
  r.seq = seq;
  r.count = 1 << 20;
  r.bytes = 4 << 20;
  r.stream = 0x7f0000001000ull;
  r.peer = -1;
  r.op = static_cast<uint8_t>(kind);
  r.dtype = 7;
  r.flags = trace::kFlagDeviceTimed;
  r.status = static_cast<uint8_t>(trace::OpStatus::kComplete);
  return r;
}

std::vector<trace::OpRecord> hand_ops(trace::OpKind kind, uint64_t comm, int n, int64_t start,
                                      int64_t every, int64_t takes) {
  std::vector<trace::OpRecord> ops;
  for (int k = 0; k < n; ++k) {
    const int64_t at = start + k * every;
    ops.push_back(hand_op(kind, comm, static_cast<uint64_t>(k), at, at + takes));
  }
  return ops;
}

trace::EventRecord hand_event(trace::EventKind kind, int64_t t, int64_t value, const char* text,
                              uint64_t comm) {
  trace::EventRecord e{};
  e.t_ns = t;
  e.comm_id = comm;
  e.value = value;
  e.device = -1;
  e.kind = static_cast<uint32_t>(kind);
  std::snprintf(e.text, sizeof e.text, "%s", text);
  return e;
}

trace::CommRecord hand_comm(uint64_t id, int nranks, int rank_in_comm) {
  trace::CommRecord c{};
  c.t_ns = 100'000'000;
  c.comm_id = id;
  c.color = -1;
  c.key = -1;
  c.nranks = nranks;
  c.rank = rank_in_comm;
  c.origin = static_cast<uint8_t>(trace::CommOrigin::kInitRank);
  return c;
}

Report analyze_quietly(const std::string& dir) {
  AnalyzeOptions options;
  options.progress = false;
  auto report = analyze_directory(dir, options);
  EXPECT_TRUE(report.ok()) << report.message();
  return report.ok() ? report.value() : Report{};
}

void write_hand_trace(const std::string& dir, const std::string& job, int rank, int world,
                      int per_node, std::span<const trace::CommRecord> comms,
                      std::span<const trace::OpRecord> ops, int64_t end_ns, int64_t host_wait_ns,
                      bool one_flush, std::span<const trace::OpRecord> pending,
                      std::span<const trace::EventRecord> events) {
  trace::TraceMeta meta;
  meta.schema_version = trace::kSchemaVersion;
  meta.producer = "test";
  meta.job_id = job;
  meta.rank = rank;
  meta.local_rank = rank % per_node;
  meta.world_size = world;
  meta.rank_source = "test";
  meta.node = "node" + std::to_string(1 + rank / per_node);
  meta.hostname = meta.node;
  meta.pid = 1000 + rank;
  meta.gpu_device = rank % per_node;
  meta.gpu_name = "test GPU";
  meta.gpu_uuid = "GPU-" + job + "-" + std::to_string(rank);
  meta.nccl_version = 22809;
  meta.cuda_driver_version = 13000;
  meta.clock_realtime_ns = 1'700'000'000'000'000'000;
  meta.clock_monotonic_ns = 0;
  auto w = trace::TraceWriter::create(dir + "/" + trace::trace_file_name(job, rank), meta);
  ASSERT_TRUE(w.ok()) << w.message();
  ASSERT_TRUE(w.value()->append(comms).ok());
  if (host_wait_ns > 0 && !one_flush && !ops.empty()) {
    trace::StatsRecord first{};
    first.t_ns = ops.front().t_enter_ns - 1'000'000;
    first.host_run_delay_ns = 1;
    ASSERT_TRUE(w.value()->flush({}, first).ok());
  }
  ASSERT_TRUE(w.value()->append(ops).ok());
  if (!events.empty()) {
    ASSERT_TRUE(w.value()->append(events).ok());
  }
  trace::EventRecord shutdown{};
  shutdown.t_ns = end_ns;
  shutdown.kind = static_cast<uint32_t>(trace::EventKind::kShutdown);
  shutdown.device = -1;
  std::snprintf(shutdown.text, sizeof shutdown.text, "%s", "tracing stopped at exit");
  ASSERT_TRUE(w.value()->append(std::span<const trace::EventRecord>(&shutdown, 1)).ok());
  trace::StatsRecord stats{};
  stats.t_ns = end_ns;
  stats.ops_recorded = ops.size();
  stats.host_run_delay_ns = static_cast<uint64_t>(host_wait_ns);
  stats.pending_ops = pending.size();
  ASSERT_TRUE(w.value()->flush(pending, stats).ok());
  ASSERT_TRUE(w.value()->close().ok());
}

void cut_table(const std::string& dir, int rank, const char* dataset, uint64_t rows) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    {
      auto r = trace::TraceReader::open(entry.path().string());
      ASSERT_TRUE(r.ok()) << r.message();
      if (r.value()->meta().rank != rank) continue;
    }
    hid_t file = H5Fopen(entry.path().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT);
    const hsize_t extent = rows;
    EXPECT_GE(H5Dset_extent(ds, &extent), 0) << dataset;
    H5Dclose(ds);
    H5Fclose(file);
    return;
  }
  FAIL() << "no file of rank " << rank << " in " << dir;
}

}  // namespace ringside::analysis::test
