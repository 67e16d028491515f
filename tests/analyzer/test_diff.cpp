// `ringside diff`: healthy runs of the same shape never count as a regression
// (several seeds), a fault in B does (exit 1, naming what got worse), its repair
// shows as better; runs of different shapes and unreadable inputs are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "diff/run_diff.h"
#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

using nlohmann::json;

// Four nodes, tensor x pipeline x data parallel: every area diff compares.
synth::SynthSpec shape(const std::string& dir, uint64_t seed) {
  synth::SynthSpec s = small_spec(dir, seed);
  s.ranks = 16;
  s.nodes = 4;
  s.tp = 2;
  s.pp = 2;
  s.steps = 40;
  return s;
}

std::string write_run(synth::SynthSpec spec, const std::vector<std::string>& faults = {}) {
  for (const auto& f : faults) {
    auto parsed = synth::parse_fault(f);
    EXPECT_TRUE(parsed.ok()) << parsed.message();
    spec.faults.push_back(parsed.value());
  }
  auto written = synth::write_synth_traces(spec);
  EXPECT_TRUE(written.ok()) << written.message();
  return spec.out_dir;
}

// A run as a report JSON (diff takes either).
std::string report_of(const std::string& trace_dir) {
  const std::string out = trace_dir + ".json";
  CliResult r = run_cli({"analyze", "-q", trace_dir, "--json", out});
  EXPECT_NE(r.exit_code, 2) << r.err;
  return out;
}

json diff_json(const std::string& a, const std::string& b, int expect_exit) {
  CliResult r = run_cli({"diff", a, b, "--json", "-"});
  EXPECT_EQ(r.exit_code, expect_exit) << r.out << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

bool names(const json& list, const std::string& area, const std::string& what) {
  for (const json& c : list)
    if (c["area"] == area && c["what"].get<std::string>().find(what) != std::string::npos &&
        c["exceeds_threshold"].get<bool>())
      return true;
  return false;
}

TEST(Diff, HealthyRunsOfDifferentSeedsNeverRegress) {
  TempDir dir("diff-healthy");
  std::vector<std::string> runs;
  for (uint64_t seed = 1; seed <= 6; ++seed)
    runs.push_back(write_run(shape(dir.path() + "/h" + std::to_string(seed), seed)));
  // Trace directories and reports, in every mix.
  const std::string ra = report_of(runs[0]), rb = report_of(runs[1]);
  std::vector<std::pair<std::string, std::string>> pairs = {
      {ra, rb},           {runs[1], ra},      {rb, runs[2]},     {runs[2], runs[3]},
      {runs[3], runs[4]}, {runs[4], runs[5]}, {runs[5], runs[0]}};
  for (const auto& [a, b] : pairs) {
    const json d = diff_json(a, b, 0);
    EXPECT_FALSE(d["regressed"].get<bool>()) << d.dump(1);
    for (const json& c : d["worse"]) EXPECT_FALSE(c["exceeds_threshold"].get<bool>()) << c;
    EXPECT_EQ(d["schema"], kDiffSchema);
    for (const char* area : {"step_time", "busbw", "rank_lateness", "node_lateness", "gpu_clock"})
      EXPECT_GT(d["compared"][area]["count"].get<int>(), 0) << area;
  }
}

TEST(Diff, StragglerIsARegressionAndItsRepairAnImprovement) {
  TempDir dir("diff-straggler");
  const std::string healthy = write_run(shape(dir.path() + "/h", 7));
  const std::string slow = write_run(shape(dir.path() + "/s", 8), {"straggler:rank=5,factor=1.25"});
  json d = diff_json(healthy, slow, 1);
  EXPECT_TRUE(d["regressed"].get<bool>());
  EXPECT_TRUE(names(d["worse"], "rank_lateness", "rank 5 ")) << d.dump(1);
  EXPECT_TRUE(names(d["worse"], "step_time", "median step")) << d.dump(1);
  EXPECT_FALSE(names(d["worse"], "rank_lateness", "rank 4 ")) << d.dump(1);
  // The text names it too.
  CliResult text = run_cli({"diff", healthy, slow});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("B regressed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 5 (node"), std::string::npos) << text.out;
  // After the repair: better, and no regression.
  d = diff_json(slow, healthy, 0);
  EXPECT_TRUE(names(d["better"], "rank_lateness", "rank 5 ")) << d.dump(1);
  EXPECT_TRUE(names(d["better"], "step_time", "median step")) << d.dump(1);
}

TEST(Diff, SlowLinkIsABusBandwidthRegression) {
  TempDir dir("diff-link");
  const std::string healthy = write_run(shape(dir.path() + "/h", 9));
  const std::string slow =
      write_run(shape(dir.path() + "/s", 10), {"slow_nic:node=node3,factor=3"});
  const json d = diff_json(report_of(healthy), slow, 1);
  EXPECT_TRUE(names(d["worse"], "busbw", "all_reduce")) << d.dump(1);
}

TEST(Diff, ThrottledGpuShowsInItsCounters) {
  TempDir dir("diff-throttle");
  const std::string healthy = write_run(shape(dir.path() + "/h", 11));
  const std::string hot = write_run(shape(dir.path() + "/t", 12), {"throttle:rank=6"});
  const json d = diff_json(healthy, hot, 1);
  EXPECT_TRUE(names(d["worse"], "gpu_slowdown", "rank 6 ")) << d.dump(1);
  EXPECT_TRUE(names(d["worse"], "gpu_clock", "rank 6 ")) << d.dump(1);
}

TEST(Diff, ThresholdDecidesWhatIsARegression) {
  TempDir dir("diff-threshold");
  const std::string healthy = write_run(shape(dir.path() + "/h", 13));
  const std::string slow =
      write_run(shape(dir.path() + "/s", 14), {"straggler:rank=9,factor=1.25"});
  // A 25% straggler is beyond noise, but not beyond a 200% threshold.
  CliResult r = run_cli({"diff", healthy, slow, "--threshold", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("below threshold"), std::string::npos) << r.out;
  r = run_cli({"diff", healthy, slow, "--threshold", "-1"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Diff, DifferentShapesAreErrors) {
  TempDir dir("diff-shape");
  const std::string base = write_run(shape(dir.path() + "/a", 1));
  synth::SynthSpec wider = shape(dir.path() + "/b", 2);
  wider.ranks = 32;
  wider.nodes = 8;
  const std::string b = write_run(wider);
  CliResult r = run_cli({"diff", base, b});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("A has 16 ranks, B has 32"), std::string::npos) << r.err;
  synth::SynthSpec no_tp = shape(dir.path() + "/c", 3);
  no_tp.tp = 1;
  no_tp.pp = 1;
  const std::string c = write_run(no_tp);
  r = run_cli({"diff", base, c});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("different communicator layouts"), std::string::npos) << r.err;
  synth::SynthSpec fewer_nodes = shape(dir.path() + "/d", 4);
  fewer_nodes.nodes = 2;
  const std::string d = write_run(fewer_nodes);
  r = run_cli({"diff", base, d});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("A has 4 nodes, B has 2"), std::string::npos) << r.err;
}

// Two communicators of the same members and role (tensor parallel over the whole
// job beside the world) pair up one to one.
TEST(Diff, TwinCommunicatorsPair) {
  TempDir dir("diff-twins");
  auto twin = [&](const std::string& name, uint64_t seed) {
    synth::SynthSpec s = small_spec(dir.path() + "/" + name, seed);
    s.nodes = 1;
    s.tp = 8;
    return write_run(s);
  };
  const json d = diff_json(twin("a", 1), twin("b", 2), 0);
  EXPECT_FALSE(d["regressed"].get<bool>()) << d.dump(1);
}

// A rank without a trace in one run is not a different shape: it is left out.
TEST(Diff, AMissingRankIsNotAShapeChange) {
  TempDir dir("diff-missing");
  const std::string a = write_run(shape(dir.path() + "/a", 15));
  const std::string b = write_run(shape(dir.path() + "/b", 16), {"missing:rank=3"});
  const json d = diff_json(a, b, 0);
  const auto& notes = d["notes"];
  EXPECT_NE(std::find(notes.begin(), notes.end(), "ranks without a trace in B: 3 (not compared)"),
            notes.end())
      << d.dump(1);
  for (const json& c : d["worse"])
    EXPECT_EQ(c["what"].get<std::string>().find("rank 3 "), std::string::npos) << c;
}

TEST(Diff, UnreadableInputsAreErrors) {
  TempDir dir("diff-input");
  const std::string run = write_run(shape(dir.path() + "/a", 5));
  CliResult r = run_cli({"diff", run, dir.path() + "/missing"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("B: " + dir.path() + "/missing: no such file"), std::string::npos) << r.err;
  const std::string junk = dir.path() + "/junk.json";
  std::ofstream(junk) << "{not json";
  r = run_cli({"diff", junk, run});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("neither a trace directory nor JSON"), std::string::npos) << r.err;
  const std::string other = dir.path() + "/other.json";
  std::ofstream(other) << "{\"schema\": 7}";
  r = run_cli({"diff", run, other});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a ringside report"), std::string::npos) << r.err;
  // A report of an older ringside, without the profile diff needs.
  json old = json::parse(std::ifstream(report_of(run)));
  old.erase("profile");
  const std::string old_path = dir.path() + "/old.json";
  std::ofstream(old_path) << old.dump();
  r = run_cli({"diff", old_path, run});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has no profile"), std::string::npos) << r.err;
  // A damaged profile is an error, not a crash.
  json bad = json::parse(std::ifstream(report_of(run)));
  bad["profile"]["ranks"]["node"] = "x";
  std::ofstream(old_path) << bad.dump();
  r = run_cli({"diff", old_path, run});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("malformed report"), std::string::npos) << r.err;
}

// What cannot be compared is said; names from a report reach the terminal printable.
TEST(Diff, NotesAndHostileNames) {
  TempDir dir("diff-notes");
  const std::string run = write_run(shape(dir.path() + "/a", 6));
  json b = json::parse(std::ifstream(report_of(run)));
  b["profile"]["steps"] = nullptr;
  b["nodes"][1] = "\x1b]0;evil\x07<script>\"";
  b["profile"]["ranks"]["mean_excess_ms"][5] = 50.0;
  const std::string path = dir.path() + "/b.json";
  std::ofstream(path) << b.dump();
  CliResult r = run_cli({"diff", run, path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("note: step time not compared: no repeating pattern of ops in B"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\x07'), std::string::npos);
  EXPECT_NE(r.out.find("rank 5 (node2 -> ?]0;evil?<script>\")"), std::string::npos) << r.out;
  const json d = diff_json(run, path, 1);
  EXPECT_EQ(d["notes"].size(), 1u);
}

TEST(Diff, NoiseThresholdGrowsWithWhatIsCompared) {
  EXPECT_DOUBLE_EQ(noise_z(1), kMinNoiseZ);
  EXPECT_GT(noise_z(4096), noise_z(16));
  EXPECT_LT(noise_z(4096), 6.0);
}

}  // namespace
}  // namespace ringside::analysis::test
