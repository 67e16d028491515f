// nccl_bench end to end on the sim: every collective checked (-c) on 2, 4 and 8
// ranks, the printed bandwidths recomputed from the printed times, flag errors,
// the minimum-bandwidth threshold, JSON and trace output.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process_util.h"

namespace ringside::bench::testing {
namespace {

struct Row {
  double size = 0, count = 0;
  std::string type, redop;
  int root = 0;
  double time[2] = {0, 0}, alg[2] = {0, 0}, bus[2] = {0, 0};
  std::string wrong[2];
};

std::vector<Row> parse_table(const std::string& out) {
  std::vector<Row> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    Row r;
    ls >> r.size >> r.count >> r.type >> r.redop >> r.root;
    for (int k = 0; k < 2; ++k) ls >> r.time[k] >> r.alg[k] >> r.bus[k] >> r.wrong[k];
    if (ls) rows.push_back(r);
  }
  return rows;
}

class SimBench : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(sim_available(&why)) << why;
  }
};

// Independent statement of nccl-tests' bus bandwidth factors.
double factor(const std::string& coll, int n) {
  if (coll == "all_reduce") return 2.0 * (n - 1) / n;
  if (coll == "broadcast" || coll == "reduce" || coll == "sendrecv") return 1.0;
  return static_cast<double>(n - 1) / n;
}

void check_collective(const std::string& coll, int ranks) {
  const RunResult r = run_shell(sim_command(
      ranks, 1, coll + " -b 1K -e 256K -f 16 -n 3 -w 1 -c 2 -r " + std::to_string(ranks - 1)));
  ASSERT_EQ(r.exit_code, 0) << coll << " on " << ranks << " ranks\n" << r.out << r.err;
  const auto rows = parse_table(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (const Row& row : rows) {
    EXPECT_EQ(row.wrong[0], "0") << coll << "\n" << r.out;
    EXPECT_EQ(row.wrong[1], coll == "sendrecv" ? "N/A" : "0") << coll << "\n" << r.out;
    EXPECT_GT(row.count, 0);
  }
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Avg bus bandwidth    : "), std::string::npos) << r.out;
}

TEST_F(SimBench, EveryCollectiveChecksOn2Ranks) {
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                        "alltoall", "gather", "scatter", "sendrecv"}) {
    check_collective(c, 2);
  }
}

TEST_F(SimBench, EveryCollectiveChecksOn4Ranks) {
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                        "alltoall", "gather", "scatter", "sendrecv"}) {
    check_collective(c, 4);
  }
}

TEST_F(SimBench, EveryCollectiveChecksOn8Ranks) {
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                        "alltoall", "gather", "scatter", "sendrecv"}) {
    check_collective(c, 8);
  }
}

TEST_F(SimBench, EveryTypeAndOpChecks) {
  const RunResult r =
      run_shell(sim_command(3, 1, "all_reduce -b 256 -e 4K -f 16 -n 1 -d all -o all"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = parse_table(r.out);
  EXPECT_EQ(rows.size(), 12u * 6u * 2u);  // nccl-tests' set on NCCL 2.28: fp8 types, mulsum
  for (const Row& row : rows)
    EXPECT_EQ(row.wrong[0] + row.wrong[1], "00") << row.type << " " << row.redop;
}

TEST_F(SimBench, TwoGpusPerProcessAndAllRoots) {
  const RunResult r = run_shell(sim_command(2, 1, "broadcast -b 4K -e 4K -n 2 -g 2 -r all"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = parse_table(r.out);
  ASSERT_EQ(rows.size(), 4u);  // 4 ranks, one row per root
  for (int k = 0; k < 4; ++k) EXPECT_EQ(rows[static_cast<size_t>(k)].root, k);
  EXPECT_NE(r.out.find("#  Rank  3 "), std::string::npos) << r.out;
}

// -t: each process drives its -g GPUs from several threads (nccl-tests' rank
// order: process, then thread, then GPU); thread 0 prints, every rank traces.
TEST_F(SimBench, ThreadsPerProcessCheckEveryCollective) {
  const std::string dir = temp_dir("threads");
  for (const char* c : {"all_reduce", "broadcast", "alltoall", "sendrecv"}) {
    const std::string traces = dir + "/" + c;
    const RunResult r = run_shell(sim_command(
        2, 1, std::string(c) + " -b 1K -e 16K -f 16 -n 2 -c 2 -t 2 -g 2 --trace-dir " + traces));
    ASSERT_EQ(r.exit_code, 0) << c << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("# nThread 2 nGpus 2 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("#  Rank  7 "), std::string::npos) << "8 ranks\n" << r.out;
    const auto rows = parse_table(r.out);
    ASSERT_EQ(rows.size(), 2u) << "thread 0 alone prints the table\n" << r.out;
    for (const Row& row : rows) EXPECT_EQ(row.wrong[0], "0") << c << "\n" << r.out;
    EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(traces)) files += e.is_regular_file();
    EXPECT_EQ(files, 8) << c;
  }
  std::filesystem::remove_all(dir);
}

// algbw = size / time, busbw = algbw * factor, recomputed from the printed numbers.
TEST_F(SimBench, BandwidthMathMatchesThePrintedTime) {
  for (const char* coll :
       {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"}) {
    const int n = 4;
    const RunResult r =
        run_shell(sim_command(n, 1, std::string(coll) + " -b 1M -e 4M -f 4 -n 3 -c 0"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto rows = parse_table(r.out);
    ASSERT_EQ(rows.size(), 2u);
    double sum = 0;
    for (const Row& row : rows) {
      for (int k = 0; k < 2; ++k) {
        const double alg = row.size / (row.time[k] * 1e-6) / 1e9;
        // Printed values are rounded to 2 decimals (time) and 2 decimals (GB/s).
        EXPECT_NEAR(row.alg[k], alg, 0.011 + 0.01 * alg) << coll << " " << row.size;
        EXPECT_NEAR(row.bus[k], alg * factor(coll, n), 0.011 + 0.01 * alg)
            << coll << " " << row.size;
        EXPECT_EQ(row.wrong[k], "N/A");
        sum += row.bus[k];
      }
    }
    const auto at = r.out.find("# Avg bus bandwidth    : ");
    ASSERT_NE(at, std::string::npos);
    const double avg = std::stod(r.out.substr(at + 25));
    EXPECT_NEAR(avg, sum / 4, 0.011) << r.out;
  }
}

TEST_F(SimBench, SizesCountsAndTheTableLayout) {
  const RunResult r = run_shell(sim_command(4, 1, "all_gather -b 1000 -e 1000 -n 1 -d double"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = parse_table(r.out);
  ASSERT_EQ(rows.size(), 1u);
  // 125 doubles / 4 ranks = 31 -> rounded down to 30 (16-byte multiple); 4*30*8 bytes.
  EXPECT_EQ(rows[0].count, 30);
  EXPECT_EQ(rows[0].size, 960);
  EXPECT_EQ(rows[0].type, "double");
  EXPECT_EQ(rows[0].redop, "none");
  EXPECT_NE(
      r.out.find(
          "#       size         count      type   redop    root     time   algbw   busbw  #wrong"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# Collective test concluded: all_gather_perf\n#\n\n"), std::string::npos);
}

TEST_F(SimBench, MinimumBandwidthFailsTheRun) {
  RunResult r = run_shell(sim_command(2, 1, "all_reduce -b 64K -e 64K -n 2 --min-busbw 100000"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << r.out;
  r = run_shell(sim_command(2, 1, "all_reduce -b 64K -e 64K -n 2 --min-busbw 0.000001"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" OK\n# Min bus bandwidth"), std::string::npos) << r.out;
}

TEST_F(SimBench, BadFlagsExitWithTwo) {
  for (const char* args : {"all_reduce --bogus", "all_reduce -n abc", "all_reduce -b 8Q",
                           "allreduce", "all_reduce -d f8e5m3", "all_reduce -b 2M -e 1M",
                           "broadcast -r 9", "all_reduce -b 8 -e 1M -f 1", "all_reduce -T -5",
                           "all_reduce -F 1", "all_reduce -I 1 -G 2"}) {
    const RunResult r = run_shell(sim_command(2, 1, args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("nccl_bench"), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.out.find("Avg bus bandwidth"), std::string::npos) << args;
  }
  const RunResult none =
      run_shell(std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " NCCL_BENCH_BIN);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("usage"), std::string::npos);
}

TEST_F(SimBench, JsonAndTraceOutput) {
  const std::string dir = temp_dir("out");
  const RunResult r = run_shell(sim_command(2, 1,
                                            "reduce_scatter -b 4K -e 8K -f 2 -n 2 --json " + dir +
                                                "/r.json --trace-dir " + dir + "/traces"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(read_file(dir + "/r.json"));
  EXPECT_EQ(j["schema"], "ringside.nccl_bench/1");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["size"], 4096);
  EXPECT_EQ(j["results"][0]["out_of_place"]["nwrong"], 0);
  EXPECT_EQ(j["out_of_bounds"]["okay"], true);
  EXPECT_EQ(j["devices"].size(), 2u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/traces")) {
    EXPECT_EQ(e.path().extension(), ".h5");
    EXPECT_GT(std::filesystem::file_size(e.path()), 0u);
    ++files;
  }
  EXPECT_EQ(files, 2);
  // The trace content is checked with h5py when available (same check as users do).
  const RunResult py = run_shell(
      "/usr/bin/python3 -c \"import h5py,glob,sys\n"
      "fs=sorted(glob.glob('" +
      dir +
      "/traces/*.h5'))\n"
      "for f in fs:\n"
      "  h=h5py.File(f,'r'); o=h['ops'][:]\n"
      "  assert h.attrs['producer']==b'nccl_bench' or h.attrs['producer']=='nccl_bench', "
      "h.attrs['producer']\n"
      "  assert len(o)>=2*(1+2+1+1), len(o)\n"
      "  assert (o['op']==5).all(), set(o['op'])\n"
      "  assert (o['seq']==range(len(o))).all()\n"
      "  assert (o['t_dev_end_ns']>=o['t_dev_start_ns']).all()\n"
      "  assert (o['flags']&8).any()\n"
      "print('ok', len(fs))\"");
  EXPECT_EQ(py.exit_code, 0) << py.out << py.err;
  EXPECT_NE(py.out.find("ok 2"), std::string::npos) << py.out << py.err;
  std::filesystem::remove_all(dir);
}

// Under a Slurm step, trace files carry the step as the probe's do
// (ringside-<job>.<step>-r<rank>.h5 and the step_id attribute), so the traces of
// two steps of one job never overwrite each other.
TEST_F(SimBench, TracesOfASlurmStepNameTheStep) {
  const std::string dir = temp_dir("step");
  const RunResult r =
      run_shell(std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " + SIMRUN_BIN +
                " -n 2 --nodes 1 -t 300 -- env -u RINGSIDE_JOB_ID "
                "SLURM_JOB_ID=4242 SLURM_STEP_ID=3 " NCCL_BENCH_BIN
                " all_reduce -b 4K -e 8K -f 2 -n 2 --trace-dir " +
                dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* name : {"ringside-4242.3-r000000.h5", "ringside-4242.3-r000001.h5"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + name)) << name;
  }
  const RunResult py = run_shell(
      "/usr/bin/python3 -c \"import h5py\n"
      "a=h5py.File('" +
      dir +
      "/ringside-4242.3-r000001.h5','r').attrs\n"
      "v=lambda k: a[k].decode() if isinstance(a[k], bytes) else str(a[k])\n"
      "print(v('job_id'), v('step_id'))\"");
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_NE(py.out.find("4242 3"), std::string::npos) << py.out << py.err;
  std::filesystem::remove_all(dir);
}

TEST_F(SimBench, MalformedLauncherVariablesExitWithTwo) {
  const RunResult r = run_shell(std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR +
                                " RANK=1x WORLD_SIZE=2 " NCCL_BENCH_BIN " all_reduce -b 1K -e 1K");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("RANK='1x' is not a non-negative integer"), std::string::npos) << r.err;
  const RunResult half = run_shell(std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR +
                                   " SLURM_PROCID=0 " NCCL_BENCH_BIN " all_reduce -b 1K -e 1K");
  EXPECT_EQ(half.exit_code, 2) << half.out << half.err;
  EXPECT_NE(half.err.find("SLURM_PROCID is set but SLURM_NTASKS is not"), std::string::npos)
      << half.err;
}

TEST_F(SimBench, RendezvousFileWithoutNcclCommId) {
  const std::string dir = temp_dir("rv");
  // simrun sets NCCL_COMM_ID; unset it so the shared file is the only way to meet.
  const std::string cmd = std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " + SIMRUN_BIN +
                          " -n 3 -t 120 -- env -u NCCL_COMM_ID " NCCL_BENCH_BIN
                          " all_reduce -b 1K -e 1K -n 2 --rendezvous " +
                          dir + "/rv";
  const RunResult r = run_shell(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out << r.err;
  const RunResult none =
      run_shell(std::string("env LD_LIBRARY_PATH=") + SIM_LIB_DIR + " " + SIMRUN_BIN +
                " -n 2 -t 60 -- env -u NCCL_COMM_ID " NCCL_BENCH_BIN " all_reduce -b 1K -e 1K");
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  EXPECT_NE(none.err.find("--rendezvous"), std::string::npos) << none.err;
  std::filesystem::remove_all(dir);
}

TEST_F(SimBench, LaunchedByMpirun) {
  const RunResult r = run_shell(
      std::string("mpirun --allow-run-as-root --oversubscribe -np 3 -x LD_LIBRARY_PATH=") +
      SIM_LIB_DIR + " " NCCL_BENCH_BIN " gather -b 4K -e 4K -n 2 -r 2");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("#  Rank  2 "), std::string::npos) << r.out;
  EXPECT_EQ(parse_table(r.out).size(), 1u) << r.out;  // only MPI rank 0 prints
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ringside::bench::testing
