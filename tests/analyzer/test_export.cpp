// `ringside export --perfetto`: the output is valid JSON whatever the names in the
// traces, and follows the Trace Event Format's rules (required fields per phase,
// metadata naming every process and track, slices nesting on every track); it
// holds every op of the job, or only those of the window asked for.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "export/perfetto_export.h"
#include "export/trace_event_writer.h"
#include "ringside/safe_text.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_file(const std::string& path) {
  const std::string text = slurp(path);
  json j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
  return j;
}

void write_synth(const std::string& dir, uint64_t seed, const std::vector<std::string>& faults,
                 int steps = 30) {
  synth::SynthSpec spec = small_spec(dir, seed);
  spec.steps = steps;
  for (const auto& f : faults) {
    auto parsed = synth::parse_fault(f);
    ASSERT_TRUE(parsed.ok()) << parsed.message();
    spec.faults.push_back(parsed.value());
  }
  auto written = synth::write_synth_traces(spec);
  ASSERT_TRUE(written.ok()) << written.message();
}

uint64_t ops_in(const std::string& dir) {
  auto listing = trace::list_trace_dir(dir);
  EXPECT_TRUE(listing.ok());
  uint64_t n = 0;
  for (const auto& f : listing.value().files) {
    auto r = trace::TraceReader::open(f.path);
    n += r.value()->op_count();
    n += r.value()->last_pending().value().size();
  }
  return n;
}

struct Checked {
  size_t slices = 0, counters = 0;
  std::vector<json> findings;
  std::set<std::string> processes;
  double min_ts = 1e300, max_end = -1e300;
};

// The Trace Event Format's rules, as far as this exporter uses them.
Checked check_trace_events(const json& doc) {
  Checked c;
  EXPECT_TRUE(doc.is_object());
  EXPECT_TRUE(doc.contains("traceEvents") && doc["traceEvents"].is_array());
  EXPECT_EQ(doc.value("displayTimeUnit", ""), "ms");
  std::map<int64_t, std::string> process_names;
  std::set<std::pair<int64_t, int64_t>> named_threads;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> tracks;
  for (const json& e : doc["traceEvents"]) {
    EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e;
    EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e;
    EXPECT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e;
    EXPECT_TRUE(e.contains("tid") && e["tid"].is_number_integer()) << e;
    const std::string ph = e["ph"];
    const auto key = std::make_pair(e["pid"].get<int64_t>(), e["tid"].get<int64_t>());
    if (ph == "M") {
      const std::string name = e["name"];
      EXPECT_TRUE(name == "process_name" || name == "thread_name" || name == "process_sort_index" ||
                  name == "thread_sort_index")
          << e;
      if (name == "process_name") {
        EXPECT_TRUE(e["args"]["name"].is_string());
        process_names[key.first] = e["args"]["name"];
      }
      if (name == "thread_name") named_threads.insert(key);
      continue;
    }
    EXPECT_TRUE(e.contains("ts") && e["ts"].is_number()) << e;
    const double ts = e["ts"];
    c.min_ts = std::min(c.min_ts, ts);
    if (ph == "X") {
      EXPECT_TRUE(e.contains("dur") && e["dur"].is_number() && e["dur"].get<double>() >= 0) << e;
      const json& a = e["args"];
      EXPECT_TRUE(a.contains("comm") && a.contains("bytes") && a.contains("rank")) << e;
      EXPECT_TRUE(a.contains("seq") || a.contains("peer")) << e;
      if (!a.contains("unfinished") && e["dur"].get<double>() > 0) {
        EXPECT_TRUE(a.contains("busbw_gbps")) << e;
      }
      tracks[key].emplace_back(ts, ts + e["dur"].get<double>());
      c.max_end = std::max(c.max_end, ts + e["dur"].get<double>());
      ++c.slices;
    } else if (ph == "C") {
      EXPECT_TRUE(e["args"].is_object() && e["args"]["value"].is_number()) << e;
      EXPECT_TRUE(process_names.count(key.first)) << "counter of an unnamed process: " << e;
      ++c.counters;
    } else if (ph == "i") {
      EXPECT_EQ(e.value("s", ""), "g") << e;
      c.findings.push_back(e);
    } else {
      ADD_FAILURE() << "unexpected phase: " << e;
    }
  }
  for (const auto& [key, slices] : tracks) {
    EXPECT_TRUE(process_names.count(key.first)) << "pid " << key.first << " has no process_name";
    EXPECT_TRUE(named_threads.count(key)) << "track " << key.second << " has no thread_name";
    // Monotonic nesting: in start order (outer first at equal starts) every
    // slice begins after the open ones end or ends inside the innermost.
    auto sorted = slices;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open;
    for (const auto& [b, e] : sorted) {
      while (!open.empty() && open.back() <= b) open.pop_back();
      EXPECT_TRUE(open.empty() || e <= open.back())
          << "slice [" << b << ", " << e << "] overlaps part of another on track " << key.second;
      open.push_back(e);
    }
  }
  for (const auto& [pid, name] : process_names) c.processes.insert(name);
  return c;
}

TEST(PerfettoExport, WholeJobFollowsTheTraceEventFormat) {
  TempDir dir("export-whole");
  write_synth(dir.path() + "/t", 1, {"straggler:rank=5,factor=1.3"});
  const std::string out = dir.path() + "/timeline.json";
  CliResult r = run_cli({"export", dir.path() + "/t", "--perfetto", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = parse_file(out);
  const Checked c = check_trace_events(doc);
  EXPECT_EQ(c.slices, ops_in(dir.path() + "/t"));
  EXPECT_EQ(c.processes, (std::set<std::string>{"node1", "node2"}));
  EXPECT_GT(c.counters, 0u);
  ASSERT_EQ(c.findings.size(), 1u);
  EXPECT_EQ(c.findings[0]["args"]["kind"], "straggler");
  EXPECT_EQ(c.findings[0]["args"]["ranks"], json::array({5}));
  EXPECT_EQ(doc["otherData"]["job"], "synth");
  // Every rank has its slices, with its comm's label and the bus bandwidth.
  std::set<int64_t> ranks;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ranks.insert(e["args"]["rank"].get<int64_t>());
    EXPECT_EQ(e["args"]["comm_label"], "world") << e;
  }
  EXPECT_EQ(ranks.size(), 8u);
}

TEST(PerfettoExport, WindowKeepsOnlyItsOps) {
  TempDir dir("export-window");
  write_synth(dir.path() + "/t", 2, {});
  const std::string all = dir.path() + "/all.json", part = dir.path() + "/part.json";
  ASSERT_EQ(run_cli({"export", dir.path() + "/t", "--perfetto", all}).exit_code, 0);
  CliResult r =
      run_cli({"export", dir.path() + "/t", "--perfetto", part, "--from", "0.5", "--to", "1.0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Checked whole = check_trace_events(parse_file(all));
  const Checked window = check_trace_events(parse_file(part));
  EXPECT_GT(window.slices, 0u);
  EXPECT_LT(window.slices * 2, whole.slices);
  for (const json& e : parse_file(part)["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double b = e["ts"], end = b + e["dur"].get<double>();
    EXPECT_GE(end, 0.5e6 - 1) << e;
    EXPECT_LE(b, 1.0e6 + 1) << e;
  }
}

TEST(PerfettoExport, AroundAHang) {
  TempDir dir("export-hang");
  write_synth(dir.path() + "/t", 3, {"stop:rank=3,op=60"}, 40);
  const std::string out = dir.path() + "/hang.json";
  CliResult r = run_cli(
      {"export", dir.path() + "/t", "--perfetto", out, "--around-finding", "1", "--span", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = parse_file(out);
  const Checked c = check_trace_events(doc);
  ASSERT_FALSE(c.findings.empty());
  const json& hang = c.findings[0];
  EXPECT_EQ(hang["args"]["kind"], "hang");
  EXPECT_TRUE(hang["args"]["at_op"].get<bool>());
  // The finding sits at its op, inside the half-second window.
  const double from = doc["otherData"]["window_from_s"], to = doc["otherData"]["window_to_s"];
  EXPECT_NEAR(to - from, 0.5, 1e-6);
  EXPECT_GE(hang["ts"].get<double>(), from * 1e6);
  EXPECT_LE(hang["ts"].get<double>(), to * 1e6);
  // The ranks that wait there have their op unfinished.
  bool unfinished = false;
  for (const json& e : doc["traceEvents"])
    unfinished |= e["ph"] == "X" && e["args"].value("unfinished", false);
  EXPECT_TRUE(unfinished);
  // A window that ends before the hang: its instant sits at the window's edge and
  // says where its op is.
  const std::string early = dir.path() + "/early.json";
  r = run_cli({"export", dir.path() + "/t", "--perfetto", early, "--from", "0", "--to", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Checked e = check_trace_events(parse_file(early));
  ASSERT_FALSE(e.findings.empty());
  EXPECT_FALSE(e.findings[0]["args"]["at_op"].get<bool>());
  EXPECT_NEAR(e.findings[0]["ts"].get<double>(), 0.1e6, 1);
  EXPECT_GT(e.findings[0]["args"]["op_time_s"].get<double>(), 0.1);
}

TEST(PerfettoExport, BadArgumentsAreClearErrors) {
  TempDir dir("export-errors");
  write_synth(dir.path() + "/t", 4, {"straggler:rank=2,factor=1.3"});
  const std::string out = dir.path() + "/x.json";
  CliResult r = run_cli({"export", dir.path() + "/t", "--perfetto", out, "--around-finding", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("whole run"), std::string::npos) << r.err;
  r = run_cli({"export", dir.path() + "/t", "--perfetto", out, "--around-finding", "9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has 1 findings"), std::string::npos) << r.err;
  r = run_cli({"export", dir.path() + "/t", "--perfetto", out, "--from", "2", "--to", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--to must be after --from"), std::string::npos) << r.err;
  r = run_cli({"export", dir.path() + "/nothing", "--perfetto", out});
  EXPECT_EQ(r.exit_code, 2);
  // A trace is never overwritten by the output.
  auto listing = trace::list_trace_dir(dir.path() + "/t");
  const std::string trace0 = listing.value().files.front().path;
  r = run_cli({"export", dir.path() + "/t", "--perfetto", trace0});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("HDF5"), std::string::npos) << r.err;
  EXPECT_TRUE(trace::TraceReader::open(trace0).ok());
}

// Names from the traces (job id, node names) and op args: quotes, backslashes,
// markup, control characters, invalid UTF-8 and non-ASCII letters.
TEST(PerfettoExport, HostileNamesAreEscaped) {
  TempDir dir("export-hostile");
  const std::vector<std::string> nodes = {
      "n\"1</script><script>alert(1)</script>",
      std::string("n\\2\x01\x1b[31m\xff\xfe-n\xc5\x93ud-\xf0\x9f\x98\x80")};
  const std::string job = "job\"<b>&";
  for (int rank = 0; rank < 2; ++rank) {
    trace::TraceMeta meta;
    meta.schema_version = trace::kSchemaVersion;
    meta.producer = "test";
    meta.job_id = job;
    meta.rank = rank;
    meta.world_size = 2;
    meta.rank_source = "test";
    meta.node = nodes[static_cast<size_t>(rank)];
    meta.hostname = "h";
    meta.clock_realtime_ns = 1'700'000'000'000'000'000;
    auto w = trace::TraceWriter::create(dir.path() + "/" + trace::trace_file_name("hostile", rank),
                                        meta);
    ASSERT_TRUE(w.ok()) << w.message();
    trace::CommRecord comm{};
    comm.comm_id = 0x5eed;
    comm.color = comm.key = -1;
    comm.nranks = 2;
    comm.rank = rank;
    comm.origin = static_cast<uint8_t>(trace::CommOrigin::kInitRank);
    ASSERT_TRUE(w.value()->append(std::span<const trace::CommRecord>(&comm, 1)).ok());
    std::vector<trace::OpRecord> ops;
    for (uint64_t s = 0; s < 20; ++s) {
      trace::OpRecord op{};
      op.t_enter_ns = static_cast<int64_t>(s) * 10'000'000;
      op.t_exit_ns = op.t_enter_ns + 1000;
      op.t_dev_start_ns = op.t_enter_ns + 2000;
      op.t_dev_end_ns = op.t_enter_ns + 1'000'000;
      op.comm_id = comm.comm_id;
      op.seq = s;
      op.count = op.bytes = 1 << 20;
      op.stream = 0x1000;
      op.peer = -1;
      op.op = static_cast<uint8_t>(trace::OpKind::kAllReduce);
      op.flags = trace::kFlagDeviceTimed;
      ops.push_back(op);
    }
    ASSERT_TRUE(w.value()->append(std::span<const trace::OpRecord>(ops)).ok());
    trace::StatsRecord stats{};
    stats.t_ns = 300'000'000;
    ASSERT_TRUE(w.value()->flush({}, stats).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  const std::string out = dir.path() + "/hostile.json";
  CliResult r = run_cli({"export", dir.path(), "--perfetto", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = slurp(out);
  EXPECT_EQ(text.find("<script>"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  for (char ch : text) EXPECT_TRUE(static_cast<unsigned char>(ch) < 0x80) << "non-ASCII byte";
  const json doc = parse_file(out);
  const Checked c = check_trace_events(doc);
  EXPECT_EQ(c.slices, 40u);
  // The names come back as the analyzer shows them: printable, letters kept.
  std::set<std::string> expected;
  for (const auto& n : nodes) expected.insert(printable(n));
  EXPECT_EQ(c.processes, expected);
  EXPECT_NE(printable(nodes[1]).find("n\xc5\x93ud-\xf0\x9f\x98\x80"), std::string::npos);
  EXPECT_EQ(doc["otherData"]["job"], printable(job));
}

TEST(PerfettoExport, WriterEscapesEveryString) {
  TempDir dir("export-writer");
  const std::string path = dir.path() + "/w.json";
  auto out = OutputFile::open(path, '{');
  ASSERT_TRUE(out.ok());
  TraceEventWriter w(out.value());
  const std::string hostile = "a\"b\\c</script>\n\t&\xc3\xa9";
  ASSERT_TRUE(w.begin().ok());
  ASSERT_TRUE(w.process_name(1, hostile, 1).ok());
  ASSERT_TRUE(w.thread_name(1, 7, hostile, 7).ok());
  ASSERT_TRUE(w.slice(1, 7, hostile, hostile, -1500, 2500, {{"k", hostile}}).ok());
  ASSERT_TRUE(w.end({{"x", hostile}}).ok());
  ASSERT_TRUE(out.value().commit().ok());
  const json doc = parse_file(path);
  EXPECT_EQ(doc["traceEvents"][0]["args"]["name"], hostile);
  EXPECT_EQ(doc["traceEvents"][4]["name"], hostile);
  EXPECT_EQ(doc["traceEvents"][4]["args"]["k"], hostile);
  EXPECT_DOUBLE_EQ(doc["traceEvents"][4]["ts"].get<double>(), -1.5);
  EXPECT_DOUBLE_EQ(doc["traceEvents"][4]["dur"].get<double>(), 2.5);
  EXPECT_EQ(doc["otherData"]["x"], hostile);
  EXPECT_EQ(slurp(path).find('<'), std::string::npos);
}

}  // namespace
}  // namespace ringside::analysis::test
