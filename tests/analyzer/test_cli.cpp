// The `ringside` executable: exit codes 0/1/2 and clear messages on stderr.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

namespace fs = std::filesystem;

void synth_into(const std::string& dir, const std::string& job,
                std::vector<std::string> faults = {}) {
  auto spec = small_spec(dir);
  spec.job_id = job;
  spec.steps = 10;
  for (const auto& f : faults) spec.faults.push_back(*synth::parse_fault(f));
  auto w = synth::write_synth_traces(spec);
  ASSERT_TRUE(w.ok()) << w.message();
}

TEST(Cli, HealthyExitsZeroAndWritesTheReportContract) {
  TempDir dir("cli-healthy");
  const std::string json = dir.path() + "/report.json";
  auto r = run_cli({"synth", "-o", dir.path() + "/t", "-n", "8", "-N", "2", "--steps", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"analyze", dir.path() + "/t", "--json", json, "--no-progress"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict: HEALTHY"), std::string::npos) << r.out;
  std::ifstream in(json);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "ringside.report/1");
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(j["ranks"], 8);
  EXPECT_EQ(j["nodes"], (std::vector<std::string>{"node1", "node2"}));
  EXPECT_TRUE(j["findings"].is_array());
  EXPECT_TRUE(j["what_if"].is_object());
  EXPECT_EQ(j["job"], "synth");
}

TEST(Cli, FindingsExitOneWithEveryContractField) {
  TempDir dir("cli-findings");
  auto r =
      run_cli({"synth", "-o", dir.path() + "/t", "--steps", "30", "--fault", "stop:rank=3,op=40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"analyze", dir.path() + "/t", "--json", "-"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "hung");
  ASSERT_FALSE(j["findings"].empty());
  const auto& f = j["findings"][0];
  for (const char* key :
       {"kind", "subkind", "ranks", "nodes", "comm", "seq", "severity", "confidence", "evidence"}) {
    EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_EQ(f["ranks"], std::vector<int>{3});
  EXPECT_EQ(f["seq"], 40);
  EXPECT_GE(f["severity"].get<double>(), 0.0);
  EXPECT_LE(f["confidence"].get<double>(), 1.0);
  EXPECT_NE(r.out.find("ringside.report/1"), std::string::npos);
}

TEST(Cli, VersionNamesTheBuildAndWhatItWasBuiltAgainst) {
  auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("ringside 0.", 0), 0u) << r.out;
  for (const char* part : {"built against NCCL 2.", "CUDA runtime ", "HDF5 1."})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " in " << r.out;
}

TEST(Cli, NotADirectory) {
  auto r = run_cli({"analyze", "/nonexistent/traces"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such directory"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, DirectoryWithoutTraces) {
  TempDir dir("cli-empty");
  auto r = run_cli({"analyze", dir.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no ringside trace files"), std::string::npos) << r.err;
}

TEST(Cli, MixedJobs) {
  TempDir dir("cli-mixed");
  synth_into(dir.path() + "/a", "jobA");
  synth_into(dir.path() + "/b", "jobB");
  fs::copy_file(dir.path() + "/b/ringside-jobB-r000001.h5",
                dir.path() + "/a/ringside-jobB-r000001.h5");
  auto r = run_cli({"analyze", dir.path() + "/a"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("more than one job"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("jobB"), std::string::npos) << r.err;
}

TEST(Cli, IncompatibleSchemaVersion) {
  TempDir dir("cli-schema");
  synth_into(dir.path(), "job");
  for (const auto& e : fs::directory_iterator(dir.path())) {
    hid_t f = H5Fopen(e.path().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
    ASSERT_GE(a, 0);
    int64_t v = 99;
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT64, &v), 0);
    H5Aclose(a);
    H5Fclose(f);
  }
  auto r = run_cli({"analyze", dir.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("99"), std::string::npos) << r.err;
}

TEST(Cli, CorruptFileIsNamedAndTheRestAnalyzed) {
  TempDir dir("cli-corrupt");
  synth_into(dir.path(), "job");
  const std::string victim = dir.path() + "/ringside-job-r000002.h5";
  fs::resize_file(victim, 2000);
  auto r = run_cli({"analyze", dir.path(), "--json", dir.path() + "/r.json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // a missing_trace finding for the unreadable rank
  EXPECT_NE(r.err.find("ringside-job-r000002.h5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  std::ifstream in(dir.path() + "/r.json");
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["missing_ranks"], std::vector<int>{2});
  EXPECT_EQ(j["findings"][0]["kind"], "missing_trace");
}

// A damaged file is named; HDF5's alarm at exit after one (it does not free an object
// header whose checksum failed, and its shutdown then loops over what is left) is not
// printed: the files are closed, and the library is left to the end of the process.
TEST(Cli, BitFlippedFilesAreNamedWithoutHdf5AlarmsAtExit) {
  TempDir dir("cli-flips");
  synth_into(dir.path(), "job");
  const std::string victim = dir.path() + "/ringside-job-r000002.h5";
  std::vector<char> bytes;
  {
    std::ifstream in(victim, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  int named = 0;
  for (int i = 1; i <= 24; ++i) {
    std::vector<char> copy = bytes;
    const size_t pos = 64 + (copy.size() - 64) * static_cast<size_t>(i) / 25;
    copy[pos] = static_cast<char>(copy[pos] ^ 0x5a);
    std::ofstream(victim, std::ios::binary)
        .write(copy.data(), static_cast<std::streamsize>(copy.size()));
    auto r = run_cli({"analyze", dir.path(), "--no-progress"});
    EXPECT_NE(r.exit_code, 2) << "flip at byte " << pos << ": " << r.err;
    EXPECT_EQ(r.err.find("HDF5"), std::string::npos) << "flip at byte " << pos << ": " << r.err;
    named += r.err.find("ringside-job-r000002.h5") != std::string::npos;
  }
  EXPECT_GT(named, 0);
}

// Rewrites the variable-length string attribute `name` of every trace in `dir`
// whose current value is `from`.
void rewrite_text_attribute(const std::string& dir, const char* name, const std::string& from,
                            const std::string& to) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".h5") continue;
    hid_t f = H5Fopen(e.path().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    ASSERT_GE(a, 0);
    hid_t type = H5Aget_type(a);  // a variable-length string
    char* old = nullptr;
    ASSERT_GE(H5Aread(a, type, &old), 0);
    const bool match = old != nullptr && from == old;
    H5free_memory(old);
    if (match) {
      const char* value = to.c_str();
      ASSERT_GE(H5Awrite(a, type, &value), 0);
    }
    H5Tclose(type);
    H5Aclose(a);
    H5Fclose(f);
  }
}

TEST(Cli, HostileNamesNeverReachTheTerminalOrTheShellRaw) {
  TempDir dir("cli-hostile");
  synth_into(dir.path(), "job", {"straggler:rank=5,factor=1.6"});
  const std::string hostile = "node2;touch${IFS}pwned\x1b]0;owned\x07\xff";
  rewrite_text_attribute(dir.path(), "node", "node2", hostile);
  rewrite_text_attribute(dir.path(), "job_id", "job", "job$(id)");
  auto r = run_cli({"analyze", dir.path(), "--no-progress"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  for (const std::string& text : {r.out, r.err}) {
    for (char c : text) {
      const auto u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u == '\n' || (u >= 0x20 && u != 0x7f && u < 0x80)) << "byte " << int(u);
    }
  }
  // The node is named as a single-quoted shell word in the next command.
  EXPECT_NE(r.out.find("srun -w 'node2;touch${IFS}pwned?]0;owned?"
                       "?'"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("srun -w node2;"), std::string::npos) << r.out;
  r = run_cli({"analyze", dir.path(), "--json", "-"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["job"], "job$(id)");
  bool named = false;
  for (const auto& n : j["nodes"])
    named = named || n == "node2;touch${IFS}pwned?]0;owned?"
                          "?";
  EXPECT_TRUE(named) << j["nodes"];
}

TEST(Cli, JsonNeverOverwritesATraceOrAnotherFile) {
  TempDir dir("cli-json-target");
  synth_into(dir.path(), "job");
  const std::string trace = dir.path() + "/ringside-job-r000001.h5";
  const auto size = fs::file_size(trace);
  auto r = run_cli({"analyze", dir.path(), "--json", trace, "--no-progress"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("not overwritten"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HDF5"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(trace), size);

  const std::string notes = dir.path() + "/notes.txt";
  std::ofstream(notes) << "my notes\n";
  r = run_cli({"analyze", dir.path(), "--json", notes, "--no-progress"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not an earlier report"), std::string::npos) << r.err;

  r = run_cli({"analyze", dir.path(), "--json", dir.path(), "--no-progress"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("directory"), std::string::npos) << r.err;

  r = run_cli({"analyze", dir.path(), "--json", dir.path() + "/no/such/dir/r.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;

  // An earlier report is replaced, and nothing else is left behind.
  const std::string report = dir.path() + "/report.json";
  ASSERT_EQ(run_cli({"analyze", dir.path(), "--json", report, "--no-progress"}).exit_code, 0);
  ASSERT_EQ(run_cli({"analyze", dir.path(), "--json", report, "--no-progress"}).exit_code, 0);
  std::ifstream in(report);
  EXPECT_EQ(nlohmann::json::parse(in)["verdict"], "healthy");
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".ringside-out"), std::string::npos) << e.path();
}

TEST(Cli, TracesWithoutAnyOpAreNotCalledHealthy) {
  TempDir dir("cli-no-ops");
  synth_into(dir.path(), "job");
  for (const auto& e : fs::directory_iterator(dir.path())) {
    hid_t f = H5Fopen(e.path().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    for (const char* name : {"ops", "pending"}) {
      hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
      ASSERT_GE(d, 0) << name;
      const hsize_t zero[1] = {0};
      ASSERT_GE(H5Dset_extent(d, zero), 0);
      H5Dclose(d);
    }
    H5Fclose(f);
  }
  auto r = run_cli({"analyze", dir.path(), "--json", "-"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["findings"].size(), 1u) << j["findings"];
  EXPECT_EQ(j["findings"][0]["kind"], "missing_trace");
  EXPECT_EQ(j["findings"][0]["subkind"], "no_ops");
  EXPECT_EQ(j["findings"][0]["ranks"].size(), 8u);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_cli({}).exit_code, 2);
  EXPECT_EQ(run_cli({"analyze"}).exit_code, 2);
  EXPECT_EQ(run_cli({"analyze", "/tmp", "--bogus"}).exit_code, 2);
  auto r = run_cli({"synth", "-o", "/tmp/ringside-never", "--fault", "straggler:rank=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("factor"), std::string::npos) << r.err;
  r = run_cli({"synth", "-o", "/tmp/ringside-never", "--buckets", "12x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--buckets"), std::string::npos) << r.err;
  EXPECT_EQ(run_cli({"analyze", "--help"}).exit_code, 0);
}

}  // namespace
}  // namespace ringside::analysis::test
