// End to end on a real Slurm (slurmctld + slurmd node1/node2 on this host, started by
// the ctest fixture slurm.cluster_start): the commands users type, on the sim.
//
// Every command is a bash script run exactly as written; its outputs go to
// <build>/tests/slurm/work/<Suite>.<Test>.log, the source of docs/slurm.md.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "launcher.h"
#include "ringside/trace_reader.h"
#include "slurm_harness.h"

namespace ringside::slurm_test {
namespace {

using nlohmann::json;

// The example's training loop: enough steps for the analyzer to see a persistent
// straggler, few enough to finish in seconds on 2 cores.
const std::string kTrainArgs = "--steps 30";

// Submits an example batch script from `dir` as users do: `sbatch --wait` returns
// when the job ends, with its exit code.  `env` ("VAR=value ") goes before it,
// with the sim cluster file `cluster`; `job_id` gets the id ("" if none printed).
ShellResult sbatch_example(const std::string& dir, const std::string& env,
                           const std::string& cluster, const std::string& script_and_args,
                           int timeout_s, std::string& job_id) {
  ShellResult r = sh("cd " + dir + " && " + env + "RINGSIM_CLUSTER=" + scenario(cluster) +
                         " sbatch --wait " + script_and_args,
                     timeout_s);
  std::smatch m;
  job_id =
      std::regex_search(r.out, m, std::regex("Submitted batch job ([0-9]+)")) ? m[1].str() : "";
  return r;
}

// `export NCCL_COMM_ID=...` for a job launched without MPI: rank 0 hosts the rendezvous.
std::string comm_id_export() {
  return "export NCCL_COMM_ID=127.0.0.1:" + std::to_string(ringside::sim::find_free_port()) + "\n";
}

json load_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json();
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    ADD_FAILURE() << path << " is not valid JSON: " << e.what();
    return json();
  }
}

std::vector<json> findings_of(const json& report, const std::string& kind) {
  std::vector<json> out;
  if (!report.contains("findings")) return out;
  for (const auto& f : report["findings"])
    if (f.value("kind", "") == kind) out.push_back(f);
  return out;
}

bool contains_str(const json& list, const std::string& v) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(),
                     [&](const json& x) { return x.is_string() && x.get<std::string>() == v; });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class Slurm : public ClusterTest {
 protected:
  // Fails the test (with the build hint) unless every named binary is built.
  void need(std::initializer_list<const char*> names) {
    for (const char* n : names) {
      std::string err = need_binary(n);
      ASSERT_EQ(err, "") << err;
    }
  }

  static void expect_ok(const ShellResult& r, const std::string& what) {
    EXPECT_FALSE(r.timed_out) << what << " timed out\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  }

  // Checks the per-rank traces of a job launched with -N2 --ntasks-per-node=4: one file
  // per rank, carrying the Slurm job id, node1/node2 and the ranks Slurm gave.
  static void expect_slurm_traces(const std::string& dir, const std::string& job_id, int world) {
    auto listing = trace::list_trace_dir(dir);
    ASSERT_TRUE(listing.ok()) << listing.message();
    EXPECT_EQ(listing->job_id, job_id) << "trace job id must be SLURM_JOB_ID";
    EXPECT_EQ(listing->world_size, world);
    EXPECT_TRUE(listing->missing_ranks.empty());
    ASSERT_EQ(static_cast<int>(listing->files.size()), world);
    int per_node = world / 2;
    for (const auto& f : listing->files) {
      auto reader = trace::TraceReader::open(f.path);
      ASSERT_TRUE(reader.ok()) << reader.message();
      const auto& m = (*reader)->meta();
      EXPECT_EQ(m.job_id, job_id) << f.path;
      EXPECT_EQ(m.rank, f.rank) << f.path;
      EXPECT_EQ(m.world_size, world) << f.path;
      EXPECT_EQ(m.rank_source, "slurm") << f.path;
      // Slurm's block distribution: ranks 0..3 on node1, 4..7 on node2.
      EXPECT_EQ(m.node, f.rank < per_node ? "node1" : "node2") << f.path;
      EXPECT_EQ(m.local_rank, f.rank % per_node) << f.path;
      EXPECT_EQ(m.simulated, 1) << f.path;
      EXPECT_GT((*reader)->op_count(), 0u) << f.path;
    }
  }

  // A traced run of the 8-rank training with a slow GPU on node2 (below).
  void traced_straggler_job(const std::string& name, const std::string& launch);
};

// The cluster itself: two idle nodes, and srun places tasks on both with the
// variables every ringside tool reads.
TEST_F(Slurm, TwoNodesAndSrunSetsRankAndNodeVariables) {
  ShellResult info = sh("sinfo -N -h -o '%N %t'");
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("node1 idle"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("node2 idle"), std::string::npos) << info.out;

  ShellResult r =
      sh("srun -N2 --ntasks-per-node=2 bash -c 'echo $SLURM_PROCID $SLURM_LOCALID "
         "$SLURMD_NODENAME' | sort");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0 0 node1\n1 1 node1\n2 0 node2\n3 1 node2\n");
}

// 1) srun-wrapped training with a slow GPU on node2: the analyzer names its rank and
// node, and the traces carry Slurm's job id, node names and ranks.  `launch` is what
// goes between srun's placement options and the program, writing traces to TRACES.
void Slurm::traced_straggler_job(const std::string& name, const std::string& launch) {
  std::string dir = fresh_dir(name);
  std::string job = "rs-" + name + "-" + std::to_string(getpid());
  std::string line = launch;
  line.replace(line.find("TRACES"), 6, dir + "/traces");
  ShellResult run =
      sh(comm_id_export() + "export RINGSIM_CLUSTER=" + scenario("straggler_node2.json") + "\n" +
             "srun -N2 --ntasks-per-node=4 --job-name=" + job + " " + line + " train_example " +
             kTrainArgs,
         180);
  expect_ok(run, line);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The traces carry Slurm's job id, node names and ranks.
  std::string job_id = job_id_by_name(job);
  ASSERT_FALSE(job_id.empty()) << "scontrol knows no job named " << job;
  expect_slurm_traces(dir + "/traces", job_id, 8);

  ShellResult an = sh("ringside analyze " + dir + "/traces --json " + dir + "/report.json");
  EXPECT_EQ(an.exit_code, 1) << "findings => exit 1\n" << an.out << an.err;
  EXPECT_NE(an.out.find("node2"), std::string::npos) << an.out;

  json report = load_json(dir + "/report.json");
  ASSERT_FALSE(report.is_null()) << "no JSON report; analyze printed:\n" << an.out << an.err;
  EXPECT_EQ(report.value("schema", ""), "ringside.report/1");
  EXPECT_EQ(report.value("verdict", ""), "degraded") << report.dump(2);
  auto stragglers = findings_of(report, "straggler");
  ASSERT_FALSE(stragglers.empty()) << report.dump(2);
  // slow_gpu node2/gpu1: SLURM_LOCALID 1 on node2 is global rank 5.
  EXPECT_EQ(stragglers[0]["ranks"], json::array({5})) << stragglers[0].dump(2);
  EXPECT_TRUE(contains_str(stragglers[0]["nodes"], "node2")) << stragglers[0].dump(2);
  EXPECT_FALSE(contains_str(stragglers[0]["nodes"], "node1")) << stragglers[0].dump(2);
}

TEST_F(Slurm, SrunWrappedTrainingNamesStragglerOnNode2) {
  need({"ringside", "train_example"});
  traced_straggler_job("straggler", "ringside run -o TRACES --");
}

#ifdef RINGSIDE_TEST_HAVE_SPANK
// The SPANK plugin: `srun --ringside=DIR` traces every task without `ringside run` in
// the command; plain `--ringside` writes to the site's default folder of plugstack.conf,
// one folder per job; `sbatch --ringside=DIR` traces the batch script's steps; a step
// without the option is not traced.
TEST_F(Slurm, SpankPluginTracesEveryTaskOfSrunRingside) {
  need({"ringside", "train_example"});
  traced_straggler_job("spank", "--ringside=TRACES");
  std::string dir = fresh_dir("spank-forms");
  std::string job = "rs-spank-" + std::to_string(getpid());

  // No DIR: <default_dir>/<job id>, default_dir being the cluster's ringside-traces.
  const std::string conf = std::getenv("SLURM_CONF");
  const std::string site = std::filesystem::path(conf).parent_path().string() + "/ringside-traces";
  std::string job2 = job + "-default";
  ShellResult run2 = sh(comm_id_export() + "srun -N2 --ntasks-per-node=1 --job-name=" + job2 +
                            " --ringside train_example --steps 5",
                        180);
  expect_ok(run2, "srun --ringside");
  ASSERT_EQ(run2.exit_code, 0) << run2.err;
  std::string job2_id = job_id_by_name(job2);
  ASSERT_FALSE(job2_id.empty());
  auto listing = trace::list_trace_dir(site + "/" + job2_id);
  ASSERT_TRUE(listing.ok()) << listing.message();
  EXPECT_EQ(listing->files.size(), 2u);
  EXPECT_EQ(listing->job_id, job2_id);

  // #SBATCH --ringside=DIR: the batch step and the steps it starts are traced.
  std::string job4 = job + "-sbatch";
  ShellResult run4 =
      sh(comm_id_export() + "sbatch --wait -N2 --ntasks-per-node=2 --job-name=" + job4 +
             " --ringside=" + dir + "/sbatch-traces -o " + dir +
             "/sbatch.out --wrap 'srun train_example --steps 5'",
         180);
  expect_ok(run4, "sbatch --ringside=DIR");
  ASSERT_EQ(run4.exit_code, 0) << run4.err << sh("cat " + dir + "/sbatch.out").out;
  auto batch = trace::list_trace_dir(dir + "/sbatch-traces");
  ASSERT_TRUE(batch.ok()) << batch.message();
  EXPECT_EQ(batch->files.size(), 4u);

  // A preload chain longer than 4 KiB is kept whole, behind the probe.
  std::string chain;
  while (chain.size() < 6000) chain += (chain.empty() ? "" : ":") + std::string("libm.so.6");
  ShellResult run5 = sh("export LD_PRELOAD=" + chain + "\nsrun -N1 -n1 --ringside=" + dir +
                            "/long bash -c 'echo \"preload=$LD_PRELOAD\"'",
                        60);
  ASSERT_EQ(run5.exit_code, 0) << run5.err;
  EXPECT_NE(run5.out.find("libringside_probe.so:" + chain + "\n"), std::string::npos)
      << run5.out.substr(0, 300);

  // Without the option: nothing traced.
  std::string job3 = job + "-plain";
  ShellResult run3 = sh(comm_id_export() + "srun -N1 -n1 --job-name=" + job3 +
                            " bash -c 'echo \"preload=[$LD_PRELOAD]\"'",
                        60);
  ASSERT_EQ(run3.exit_code, 0) << run3.err;
  EXPECT_NE(run3.out.find("preload=[]"), std::string::npos) << run3.out;
}
#endif

// 2) A rank stops issuing ops; Slurm ends the job at its time limit (SIGTERM, then
// SIGKILL KillWait seconds later). The traces left behind name the missing rank, the
// communicator and the op.
TEST_F(Slurm, TimeLimitKillOfHungJobLeavesTracesThatNameMissingRank) {
  need({"ringside", "train_example"});
  std::string dir = fresh_dir("hang");
  std::string job = "rs-hang-" + std::to_string(getpid());
  // Rank 6 (node2) stops before step 5; the others wait in its all-reduce until the
  // time limit. Slurm counts limits in whole minutes and checks them every 30 s, so
  // --time=1 ends the job 60 to 90 s after it starts.
  ShellResult run =
      sh(comm_id_export() + "export RINGSIM_CLUSTER=" + scenario("two_nodes.json") + "\n" +
             "srun -N2 --ntasks-per-node=4 --time=1 --job-name=" + job + " ringside run -o " + dir +
             "/traces -- train_example --steps 1000 --hang-rank 6 --hang-step 5",
         150);
  expect_ok(run, "hung srun");
  EXPECT_NE(run.exit_code, 0) << "a job killed at its time limit fails";
  EXPECT_NE(run.err.find("DUE TO TIME LIMIT"), std::string::npos) << run.err;
  {
    // Every rank left a readable file, including the hung one (SIGTERM flush).
    std::string job_id = job_id_by_name(job);
    ASSERT_FALSE(job_id.empty());
    auto listing = trace::list_trace_dir(dir + "/traces");
    ASSERT_TRUE(listing.ok()) << listing.message();
    EXPECT_EQ(listing->job_id, job_id);
    EXPECT_EQ(listing->files.size(), 8u);
    EXPECT_TRUE(listing->bad_files.empty());
  }

  ShellResult an = sh("ringside analyze " + dir + "/traces --json " + dir + "/report.json");
  EXPECT_EQ(an.exit_code, 1) << an.out << an.err;
  json report = load_json(dir + "/report.json");
  ASSERT_FALSE(report.is_null()) << "no JSON report; analyze printed:\n" << an.out << an.err;
  EXPECT_EQ(report.value("verdict", ""), "hung") << report.dump(2);
  auto hangs = findings_of(report, "hang");
  ASSERT_FALSE(hangs.empty()) << report.dump(2);
  const json& h = hangs[0];
  EXPECT_EQ(h.value("subkind", ""), "missing_rank") << h.dump(2);
  EXPECT_EQ(h["ranks"], json::array({6})) << h.dump(2);
  EXPECT_TRUE(contains_str(h["nodes"], "node2")) << h.dump(2);
  EXPECT_TRUE(h.contains("comm") && !h["comm"].is_null()) << h.dump(2);
  EXPECT_TRUE(h.contains("seq") && h["seq"].is_number_integer()) << h.dump(2);
  // The op: the example's gradient all-reduce, named in the finding and its evidence.
  EXPECT_EQ(h.value("op", ""), "all_reduce") << h.dump(2);
  EXPECT_NE(lower(h.value("evidence", "")).find("all_reduce"), std::string::npos) << h.dump(2);
}

// 3) The example batch script, submitted as users do: benchmark and analysis.
TEST_F(Slurm, SbatchExampleRunsBenchmarkAndAnalysis) {
  need({"ringside", "nccl_bench"});
  std::string dir = fresh_dir("sbatch");
  std::string script = paths().source_dir + "/examples/slurm/nccl_bench.sbatch";
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  std::string job_id;
  ShellResult r = sbatch_example(dir, "BENCH_MAX_BYTES=1M ", "two_nodes.json", script, 240, job_id);
  expect_ok(r, "sbatch --wait");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_FALSE(job_id.empty()) << r.out;

  std::string log = read_file(dir + "/ringside-bench-" + job_id + ".out");
  ASSERT_FALSE(log.empty()) << "no job output in " << dir << ": "
                            << ::testing::PrintToString(list_dir(dir));
  // nccl-tests' footer, from the benchmark.
  EXPECT_NE(log.find("Out of bounds values : 0 OK"), std::string::npos) << log;
  EXPECT_NE(log.find("Avg bus bandwidth"), std::string::npos) << log;
  // The analysis of the benchmark's traces ran on all 8 ranks of this job.
  std::string out = dir + "/ringside-" + job_id;
  json bench = load_json(out + "/all_reduce.json");
  EXPECT_FALSE(bench.is_null()) << "no benchmark JSON in " << out;
  auto listing = trace::list_trace_dir(out + "/traces");
  ASSERT_TRUE(listing.ok()) << listing.message();
  EXPECT_EQ(listing->job_id, job_id);
  EXPECT_EQ(listing->files.size(), 8u);
  json report = load_json(out + "/report.json");
  ASSERT_FALSE(report.is_null()) << "no report in " << out << "\njob log:\n" << log;
  EXPECT_EQ(report.value("schema", ""), "ringside.report/1");
  EXPECT_EQ(report["ranks"], 8) << report.dump(2);
}

// 3b) The training example script: the job wrapped by `ringside run`, then analyzed.
TEST_F(Slurm, SbatchTrainingScriptTracesAndAnalyzesTheJob) {
  need({"ringside", "train_example"});
  std::string dir = fresh_dir("sbatch_train");
  std::string script = paths().source_dir + "/examples/slurm/train_traced.sbatch";
  std::string job_id;
  ShellResult r = sbatch_example(dir, "", "two_nodes.json", script, 240, job_id);
  expect_ok(r, "sbatch --wait");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_FALSE(job_id.empty()) << r.out;
  std::string log = read_file(dir + "/ringside-train-" + job_id + ".out");
  EXPECT_NE(log.find("train_example: done"), std::string::npos) << log;
  EXPECT_NE(log.find("ringside analyze: job " + job_id), std::string::npos) << log;
  expect_slurm_traces(dir + "/ringside-" + job_id + "/traces", job_id, 8);
  json report = load_json(dir + "/ringside-" + job_id + "/report.json");
  ASSERT_FALSE(report.is_null()) << log;
  EXPECT_EQ(report.value("job", ""), job_id);
  EXPECT_EQ(report["ranks"], 8);
  // The watch ran beside the step: a healthy job gives no event, and its gauges say
  // the job is not hung.
  const std::string out = dir + "/ringside-" + job_id;
  EXPECT_TRUE(std::filesystem::exists(out + "/events.jsonl")) << read_file(out + "/watch.log");
  EXPECT_EQ(read_file(out + "/events.jsonl"), "") << read_file(out + "/watch.log");
  EXPECT_NE(read_file(out + "/ringside.prom").find("ringside_job_hung{job=\"" + job_id + "\"} 0"),
            std::string::npos)
      << read_file(out + "/ringside.prom");
}

// 3c) The same script on a job that hangs: the watch beside the step names the
// hung rank while the job still runs, before the time limit kills it.
TEST_F(Slurm, SbatchTrainingScriptWatchNamesAHangAndStopsTheStep) {
  need({"ringside", "train_example"});
  std::string dir = fresh_dir("sbatch_train_hang");
  std::string script = paths().source_dir + "/examples/slurm/train_traced.sbatch";
  std::string job_id;
  // The time limit (1 minute, Slurm's least) only guards the test: the watch is to
  // stop the step as soon as it names the hang.
  ShellResult r =
      sbatch_example(dir, "RINGSIDE_STOP_ON_HANG=1 ", "two_nodes.json",
                     "--time=1 " + script + " --hang-rank 3 --hang-step 5", 400, job_id);
  expect_ok(r, "sbatch --wait");
  EXPECT_NE(r.exit_code, 0) << "a job stopped on a hang fails\n" << r.out << r.err;
  ASSERT_FALSE(job_id.empty()) << r.out;
  const std::string out = dir + "/ringside-" + job_id;
  const std::string events = read_file(out + "/events.jsonl");
  std::vector<json> news;
  std::istringstream lines(events);
  for (std::string line; std::getline(lines, line);) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == "new") news.push_back(e);
  }
  ASSERT_FALSE(news.empty()) << "no live event\n" << read_file(out + "/watch.log");
  EXPECT_EQ(news[0]["finding"]["kind"], "hang") << events;
  EXPECT_EQ(news[0]["finding"]["subkind"], "missing_rank") << events;
  EXPECT_EQ(news[0]["finding"]["ranks"], json::array({3})) << events;
  EXPECT_NE(read_file(out + "/ringside.prom").find("ringside_job_hung{job="), std::string::npos);
  // Stopped by the watch, not by the time limit; the analysis after it names the rank.
  const std::string log = read_file(dir + "/ringside-train-" + job_id + ".out");
  EXPECT_EQ(log.find("TIME LIMIT"), std::string::npos) << log;
  json report = load_json(out + "/report.json");
  ASSERT_FALSE(report.is_null()) << log;
  const auto hangs = findings_of(report, "hang");
  ASSERT_FALSE(hangs.empty()) << report.dump(2);
  EXPECT_EQ(hangs[0]["ranks"], json::array({3})) << report.dump(2);
}

// 5b) The validation script, with extra flags passed through sbatch: the job fails
// because node2 does, and its output ends with node2's drain line.  Two tasks per node
// (sbatch's option over the script's #SBATCH line): the GPU checks at four per node
// are those of 5); this is about the script, in half the time.
TEST_F(Slurm, SbatchValidateScriptFailsSlowNode) {
  need({"nccl_bench"});
  std::string dir = fresh_dir("sbatch_validate");
  std::string script = paths().source_dir + "/examples/slurm/validate_nodes.sbatch";
  std::string job_id;
  ShellResult r = sbatch_example(dir, "", "slow_node2.json",
                                 "--ntasks-per-node=2 " + script + " --sizes 1M -n 5", 240, job_id);
  expect_ok(r, "sbatch --wait");
  EXPECT_EQ(r.exit_code, 1) << "the job fails when a node fails\n" << r.out << r.err;
  ASSERT_FALSE(job_id.empty()) << r.out;
  std::string log = read_file(dir + "/ringside-validate-" + job_id + ".out");
  EXPECT_TRUE(
      std::regex_search(log, std::regex(R"(scontrol update nodename=node2 state=drain reason=)")))
      << log;
  EXPECT_EQ(log.find("nodename=node1"), std::string::npos) << log;
  json verdict = load_json(dir + "/ringside-validate-" + job_id + ".json");
  ASSERT_FALSE(verdict.is_null()) << log;
  EXPECT_EQ(verdict.value("verdict", ""), "fail");
  std::map<std::string, std::string> status;
  for (const auto& n : verdict["nodes"]) status[n.value("node", "")] = n.value("status", "");
  EXPECT_EQ(status, (std::map<std::string, std::string>{{"node1", "PASS"}, {"node2", "FAIL"}}))
      << verdict.dump(2);
}

// 4a) nccl_bench under plain srun, no MPI: Slurm variables plus NCCL_COMM_ID.
TEST_F(Slurm, NcclBenchAllReduceUnderPlainSrun) {
  need({"nccl_bench"});
  ShellResult r =
      sh(comm_id_export() + "export RINGSIM_CLUSTER=" + scenario("two_nodes.json") + "\n" +
             "srun -N2 --ntasks-per-node=4 nccl_bench all_reduce -b 8 -e 512K -f 4 -c 1",
         120);
  expect_ok(r, "srun nccl_bench");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Avg bus bandwidth"), std::string::npos) << r.out;
  // One table for the job, not one per task: the last size (8 * 4^8) is printed once.
  std::regex row(R"(^\s+524288\s)", std::regex::multiline);
  auto rows =
      std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), row), std::sregex_iterator());
  EXPECT_EQ(rows, 1) << r.out;
}

// 4b) The same through Slurm's PMIx and Open MPI (MPI_Init under srun).
TEST_F(Slurm, NcclBenchAllReduceUnderSrunMpiPmix) {
  need({"nccl_bench"});
  // One node: across the two "nodes" of this one-host cluster Open MPI's TCP wire-up
  // fails now and then (see docs/slurm.md); on one node PMIx needs no setting.
  ShellResult r = sh("export RINGSIM_CLUSTER=" + scenario("two_nodes.json") + "\n" +
                         "srun -N1 -n4 --mpi=pmix nccl_bench all_reduce -b 8 -e 512K -f 4 -c 1",
                     120);
  expect_ok(r, "srun --mpi=pmix nccl_bench");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out;
}

// 5) validate over both nodes with node2's GPUs 4x slower: node2 fails, node1 passes,
// and the printed drain line, run against this cluster, drains exactly node2.
// (The scenario lowers the sim's intra-node bandwidth so that the modelled transfer
// time, which slow_gpu stretches, outweighs the sim's CPU cost on 2 cores.)
TEST_F(Slurm, ValidateFailsSlowNodeAndItsDrainLineDrainsIt) {
  need({"nccl_bench"});
  ShellResult r =
      sh(comm_id_export() + "export RINGSIM_CLUSTER=" + scenario("slow_node2.json") + "\n" +
             "srun -N2 --ntasks-per-node=4 nccl_bench validate --level quick --sizes 1M -n 3",
         180);
  expect_ok(r, "srun nccl_bench validate");
  EXPECT_EQ(r.exit_code, 1) << "a failing node => exit 1\n" << r.out << r.err;

  std::smatch m;
  std::regex drain(R"((scontrol update nodename=(\S+) state=drain reason=.*))", std::regex::icase);
  std::set<std::string> drained;
  std::string drain_line;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), drain);
       it != std::sregex_iterator(); ++it) {
    drained.insert((*it)[2]);
    drain_line = (*it)[1];
  }
  EXPECT_EQ(drained, std::set<std::string>{"node2"}) << r.out;
  std::regex node2_fail(R"(node2\b.*FAIL)");
  std::regex node1_pass(R"(node1\b.*PASS)");
  EXPECT_TRUE(std::regex_search(r.out, node2_fail)) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, node1_pass)) << r.out;
  ASSERT_FALSE(drain_line.empty());

  // The line is meant to be pasted: run it, check Slurm drained node2, then resume it.
  ShellResult d = sh(drain_line);
  ShellResult state = sh("sinfo -N -h -o '%N %t %E'");
  sh("scontrol update nodename=node2 state=resume");
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(std::regex_search(state.out, std::regex(R"(node2 (drain|drng))"))) << state.out;
  EXPECT_TRUE(std::regex_search(state.out, std::regex(R"(node1 idle)"))) << state.out;
}

// `ringside fleet` on the reports of several jobs run here, with Slurm accounting from
// the cluster's slurmdbd (MariaDB): the node with a slow GPU in two of three jobs ranks
// first with the GPU-hours it cost, and the jobs are joined with their sacct records.
TEST_F(Slurm, FleetNamesTheNodeAtFaultInTwoJobsWithAccountingFromSlurmdbd) {
  need({"ringside", "train_example"});
  const std::string dir = fresh_dir("fleet");
  const std::vector<std::string> scenarios = {"straggler_node2.json", "two_nodes.json",
                                              "straggler_node2.json"};
  std::vector<std::string> ids;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const std::string job = "rs-fleet" + std::to_string(i) + "-" + std::to_string(getpid());
    const std::string traces = dir + "/traces" + std::to_string(i);
    ShellResult run = sh(comm_id_export() + "export RINGSIM_CLUSTER=" + scenario(scenarios[i]) +
                             "\nsrun -N2 --ntasks-per-node=4 --job-name=" + job +
                             " ringside run -o " + traces + " -- train_example " + kTrainArgs,
                         180);
    expect_ok(run, "srun " + job);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::string id = job_id_by_name(job);
    ASSERT_FALSE(id.empty()) << "scontrol knows no job named " << job;
    ids.push_back(id);
    // Where the batch examples put a job's report.
    ShellResult an = sh("mkdir -p " + dir + "/reports/ringside-" + id + " && ringside analyze " +
                        traces + " -q --json " + dir + "/reports/ringside-" + id + "/report.json");
    EXPECT_NE(an.exit_code, 2) << an.err;
  }
  // slurmdbd records a job shortly after it ends, and its record may be completed in
  // more than one message from slurmctld (a loaded host has shown a COMPLETED job
  // without its partition yet): wait until sacct has all three whole.
  std::string id_list = ids[0] + "," + ids[1] + "," + ids[2];
  ShellResult known;
  for (int i = 0; i < 90; ++i) {
    known = sh("sacct -X -n -P -o JobID,State,Partition -j " + id_list +
               " | grep -c '|COMPLETED|debug$'");
    if (known.out == "3\n") break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_EQ(known.out, "3\n") << "sacct does not know the jobs whole: "
                              << sh("sacct -X -n -P -o JobID,State,Partition -j " + id_list).out
                              << known.err;

  ShellResult f = sh("ringside fleet " + dir + "/reports --json " + dir + "/fleet.json");
  EXPECT_EQ(f.exit_code, 1) << "a node to drain => exit 1\n" << f.out << f.err;
  EXPECT_NE(f.out.find("drain: scontrol update nodename=node2 state=drain"), std::string::npos)
      << f.out;
  json fleet = load_json(dir + "/fleet.json");
  ASSERT_FALSE(fleet.is_null()) << f.out << f.err;
  EXPECT_EQ(fleet["jobs_read"], 3);
  EXPECT_TRUE(fleet["warnings"].empty()) << fleet["warnings"].dump();
  ASSERT_FALSE(fleet["culprits"].empty()) << f.out;
  const json& first = fleet["culprits"][0];
  EXPECT_EQ(first["what"], "node") << first.dump(2);
  EXPECT_EQ(first["name"], "node2") << first.dump(2);
  EXPECT_EQ(first["jobs_blamed"], 2) << first.dump(2);
  EXPECT_EQ(first["jobs_seen"], 3) << first.dump(2);
  EXPECT_GT(first["gpu_hours_lost"].get<double>(), 0) << first.dump(2);
  for (const json& c : fleet["culprits"]) {
    EXPECT_NE(c["name"], "node1") << c.dump(2);
  }
  for (const json& j : fleet["jobs"]) {
    EXPECT_TRUE(j["accounting"].get<bool>()) << j.dump(2);
    EXPECT_EQ(j["partition"], "debug") << j.dump(2);
    EXPECT_EQ(j["state"], "COMPLETED") << j.dump(2);
    EXPECT_TRUE(j["wait_s"].is_number()) << j.dump(2);
  }
}

}  // namespace
}  // namespace ringside::slurm_test
