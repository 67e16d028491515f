// `ringside fleet`: accounting dumps, report loading, and repeat offenders
// across jobs made with synth (a node at fault in two jobs ranks first).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fleet/accounting.h"
#include "fleet/fleet.h"
#include "test_util.h"

namespace ringside::analysis {
namespace {

using test::run_cli;
using test::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

constexpr const char* kSacctDump =
    "JobID|JobName|Partition|User|State|Submit|Start|End|ElapsedRaw|NodeList|AllocTRES\n"
    "41|train|gpu|alice|COMPLETED|2026-11-20T10:00:00|2026-11-20T10:05:00|"
    "2026-11-20T11:05:00|3600|node[1-2]|billing=8,cpu=8,gres/gpu=8,mem=64G,node=2\n"
    "41.batch|batch||alice|COMPLETED|2026-11-20T10:05:00|2026-11-20T10:05:00|"
    "2026-11-20T11:05:00|3600|node1|cpu=2\n"
    "42|eval|debug|bob|TIMEOUT|2026-11-20T12:00:00|Unknown|Unknown|0|None assigned|\n";

TEST(FleetAccounting, ParsableDumpKeepsAllocationsWithWaitRunAndGpus) {
  std::map<std::string, fleet::SacctJob> jobs;
  ASSERT_TRUE(fleet::parse_sacct(kSacctDump, "dump", &jobs).ok());
  ASSERT_EQ(jobs.size(), 2u);  // 41.batch is a step of 41
  const fleet::SacctJob& j = jobs.at("41");
  EXPECT_EQ(j.partition, "gpu");
  EXPECT_EQ(j.user, "alice");
  EXPECT_EQ(j.gpus, 8);
  EXPECT_EQ(j.elapsed_s, 3600);
  ASSERT_TRUE(j.wait_s());
  EXPECT_EQ(*j.wait_s(), 300);
  EXPECT_FALSE(jobs.at("42").wait_s());  // never started
  EXPECT_FALSE(jobs.at("42").gpus);
}

TEST(FleetAccounting, JsonDumpInBothNumberStyles) {
  const std::string json = R"({"jobs": [
    {"job_id": 7, "name": "a", "partition": "gpu", "user": "carol",
     "state": {"current": "COMPLETED"}, "nodes": "node1",
     "time": {"submission": 1000, "start": 1060, "end": 1660, "elapsed": 600},
     "tres": {"allocated": [{"type": "cpu", "count": 4}, {"type": "gres", "name": "gpu", "count": 4}]}},
    {"job_id": 8, "state": {"current": ["FAILED"]},
     "time": {"submission": {"set": true, "number": 2000}, "start": {"set": true, "number": 2010},
              "elapsed": {"set": true, "number": 5}}}]})";
  std::map<std::string, fleet::SacctJob> jobs;
  ASSERT_TRUE(fleet::parse_sacct(json, "dump", &jobs).ok());
  EXPECT_EQ(jobs.at("7").gpus, 4);
  EXPECT_EQ(*jobs.at("7").wait_s(), 60);
  EXPECT_EQ(jobs.at("8").state, "FAILED");
  EXPECT_EQ(*jobs.at("8").wait_s(), 10);
  EXPECT_EQ(jobs.at("8").elapsed_s, 5);
}

TEST(FleetAccounting, BadDumpsNameTheProblem) {
  std::map<std::string, fleet::SacctJob> jobs;
  Status s = fleet::parse_sacct("Name|State\nx|y\n", "a.txt", &jobs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no JobID column"), std::string::npos) << s.message();
  s = fleet::parse_sacct("JobID|State\n1|x|y\n", "a.txt", &jobs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 2 has 3 fields"), std::string::npos) << s.message();
  s = fleet::parse_sacct("{\"jobs\": 3}", "b.json", &jobs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("b.json"), std::string::npos) << s.message();
  EXPECT_FALSE(fleet::parse_sacct("  \n", "c", &jobs).ok());
}

TEST(FleetAccounting, MissingSacctProgramIsAnError) {
  std::map<std::string, fleet::SacctJob> jobs;
  const Status s = fleet::run_sacct("/nonexistent/sacct", {"12"}, &jobs);
  EXPECT_FALSE(s.ok());
  // Ids that are not Slurm's are never asked for.
  EXPECT_TRUE(fleet::run_sacct("/nonexistent/sacct", {"synth", "simrun-1-2"}, &jobs).ok());
}

// One synthetic job's report in dir/<job>/report.json.
void job_report(const TempDir& dir, const std::string& job, int seed,
                const std::vector<std::string>& faults,
                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      "synth", "-o",     dir.path() + "/t" + job, "-n", "8", "-N", "4", "--steps", "30", "--job-id",
      job,     "--seed", std::to_string(seed)};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const auto& f : faults) {
    args.push_back("--fault");
    args.push_back(f);
  }
  ASSERT_EQ(run_cli(args).exit_code, 0);
  std::filesystem::create_directories(dir.path() + "/reports/" + job);
  const auto r = run_cli({"analyze", dir.path() + "/t" + job, "--json",
                          dir.path() + "/reports/" + job + "/report.json", "-q"});
  ASSERT_NE(r.exit_code, 2) << r.err;
}

TEST(Fleet, TheNodeAtFaultInTwoJobsRanksFirstWithItsCostAndADrainLine) {
  TempDir dir("fleet_repeat");
  // node3 holds ranks 4 and 5: a slow GPU in one job, a slow NIC in another; a
  // healthy job and a data-dependent imbalance (the program's, no node's) beside.
  job_report(dir, "501", 1, {"straggler:rank=5,factor=1.4"});
  // (synth times links through pipeline send/recv: --pp.)
  job_report(dir, "502", 2, {"slow_nic:node=node3,factor=4"}, {"--pp", "2"});
  job_report(dir, "503", 3, {});
  job_report(dir, "504", 4, {"imbalance:amount=0.4"});
  write_text(dir.path() + "/reports/notes.json", "{\"not\": \"a report\"}");
  write_text(dir.path() + "/sacct.txt", std::string(kSacctDump) +
                                            "501|t|gpu|alice|COMPLETED|2026-11-20T10:00:00|"
                                            "2026-11-20T10:01:00|2026-11-20T12:01:00|7200|"
                                            "node[1-4]|gres/gpu=8\n");
  const std::string json = dir.path() + "/fleet.json";
  const auto r = run_cli(
      {"fleet", dir.path() + "/reports", "--sacct", dir.path() + "/sacct.txt", "--json", json});
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;  // a node to drain
  EXPECT_NE(r.out.find("drain: scontrol update nodename=node3 state=drain"), std::string::npos)
      << r.out;
  std::ifstream in(json);
  const nlohmann::json f = nlohmann::json::parse(in);
  EXPECT_EQ(f["schema"], "ringside.fleet/1");
  EXPECT_EQ(f["jobs_read"], 4);
  ASSERT_FALSE(f["culprits"].empty());
  const auto& first = f["culprits"][0];
  EXPECT_EQ(first["what"], "node");
  EXPECT_EQ(first["name"], "node3");
  EXPECT_EQ(first["jobs_blamed"], 2);
  EXPECT_EQ(first["jobs_seen"], 4);
  EXPECT_TRUE(first["drain"].get<bool>());
  EXPECT_GT(first["gpu_hours_lost"].get<double>(), 0);
  for (const auto& c : f["culprits"]) {
    // Nothing else is drained, and the imbalance blames no node.
    if (c["name"] != "node3") {
      EXPECT_FALSE(c["drain"].get<bool>()) << c.dump();
    }
    if (c["what"] == "gpu") {
      EXPECT_EQ(c["node"], "node3") << c.dump();
    }
  }
  // Job 501 joined with its accounting: 8 GPUs for 2 h, waited 60 s.
  bool joined = false;
  for (const auto& j : f["jobs"]) {
    if (j["job"] != "501") continue;
    joined = true;
    EXPECT_TRUE(j["accounting"].get<bool>());
    EXPECT_EQ(j["wait_s"], 60);
    EXPECT_DOUBLE_EQ(j["gpu_hours"].get<double>(), 16);
    EXPECT_TRUE(j["gpu_util_pct"].is_number());
  }
  EXPECT_TRUE(joined);
  bool skipped = false;
  for (const auto& w : f["warnings"])
    skipped |= w.get<std::string>().find("notes.json") != std::string::npos;
  EXPECT_TRUE(skipped) << f["warnings"].dump();
  EXPECT_FALSE(f["groups"].empty());
}

TEST(Fleet, HealthyJobsBlameNothing) {
  TempDir dir("fleet_healthy");
  for (int i = 0; i < 3; ++i) job_report(dir, std::to_string(600 + i), 10 + i, {});
  const auto r = run_cli({"fleet", dir.path() + "/reports", "--no-sacct", "--json", "-"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json f = nlohmann::json::parse(r.out);
  EXPECT_TRUE(f["culprits"].empty()) << f["culprits"].dump();
  EXPECT_EQ(f["jobs_read"], 3);
}

TEST(Fleet, InputErrorsNameTheProblem) {
  TempDir dir("fleet_errors");
  auto r = run_cli({"fleet", dir.path() + "/nothing"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such file or directory"), std::string::npos) << r.err;
  r = run_cli({"fleet", dir.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no ringside report"), std::string::npos) << r.err;
  write_text(dir.path() + "/r.json",
             R"({"schema": "ringside.report/1", "job": "9", "findings": [{"nodes": ["x"]}]})");
  r = run_cli({"fleet", dir.path(), "--no-sacct"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("r.json: a finding without a kind"), std::string::npos) << r.err;
  write_text(dir.path() + "/r.json", R"({"schema": "ringside.report/1", "job": "9"})");
  write_text(dir.path() + "/s.txt", "garbage\n");
  r = run_cli({"fleet", dir.path(), "--sacct", dir.path() + "/s.txt"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("s.txt"), std::string::npos) << r.err;
  r = run_cli({"fleet", dir.path(), "--sacct", dir.path() + "/s.txt", "--no-sacct"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace ringside::analysis
