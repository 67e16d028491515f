#include "test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

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

}  // namespace ringside::analysis::test
