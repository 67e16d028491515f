// Helpers for the real-Slurm end-to-end tests: the cluster started by cluster.sh (a
// ctest fixture), shell commands run exactly as a user types them, and transcripts
// of what they printed (docs/slurm.md shows these outputs).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ringside::slurm_test {

struct ShellResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

// Paths baked in by CMake.
struct Paths {
  std::string bin_dir;      // <build>/bin
  std::string sim_lib_dir;  // <build>/sim/lib
  std::string source_dir;   // checkout root
  std::string work_dir;     // <build>/tests/slurm/work: job outputs
  std::string state_file;   // written by `cluster.sh start`
};
const Paths& paths();

// The running cluster's variables (SLURM_CONF, TESTCLUSTER_DIR, daemon pids),
// read from the state file. Empty map if the cluster is not up.
std::map<std::string, std::string> cluster_state();

// Exports SLURM_CONF and the sim's LD_LIBRARY_PATH into this process's environment,
// so that every command inherits them (srun passes the caller's environment on).
// Returns an error message, or "" when the cluster is up.
std::string enter_cluster();

// Runs `script` with bash in its own process group; kills the group after
// `timeout_s`. The command and its outputs are appended to the transcript of the
// current test (<work_dir>/<test>.log).
ShellResult sh(const std::string& script, int timeout_s = 120);

// Starts the current test's transcript afresh.
void reset_transcript();

// A fresh empty folder under work_dir for one test.
std::string fresh_dir(const std::string& name);

// The Slurm job id of the (possibly finished) job named `job_name`, "" if none.
std::string job_id_by_name(const std::string& job_name);

// The path of the sim cluster file tests/slurm/scenarios/<name>.
std::string scenario(const std::string& name);

// Whether <bin_dir>/<name> exists; else a message naming the target to build.
std::string need_binary(const std::string& name);

std::string read_file(const std::string& path);
std::vector<std::string> list_dir(const std::string& dir);

// A test on the cluster: a fresh transcript and the cluster's variables exported. Not a
// skip: a cluster that did not come up fails every test.
class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_transcript();
    std::string err = enter_cluster();
    ASSERT_EQ(err, "") << err;
  }
};

}  // namespace ringside::slurm_test
