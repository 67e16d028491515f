// Helpers: temporary directories, synth + analyze in one call, running the CLI.
#pragma once

#include <string>
#include <vector>

#include "analyze.h"
#include "synth/synth_spec.h"

namespace ringside::analysis::test {

// A fresh directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

synth::SynthSpec small_spec(const std::string& dir, uint64_t seed = 1);
// Writes traces for `spec` with the given faults and analyzes them.
Report synth_and_analyze(synth::SynthSpec spec, const std::vector<std::string>& faults = {});

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};
CliResult run_cli(const std::vector<std::string>& args);

const Finding* find_kind(const Report& r, const std::string& kind, const std::string& subkind = "");

}  // namespace ringside::analysis::test
