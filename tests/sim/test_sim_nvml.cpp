// NVML, loaded at run time through include/ringside/nvml_abi.h, reports the cluster file.
#include <gtest/gtest.h>

#include <cstdlib>

#include "sim_test_util.h"

using namespace ringside::sim::test;

namespace {

const std::string kCheck = SIM_NVML_CHECK_PATH;

TEST(SimNvml, HealthyDefaults) {
  auto r =
      run_command(sim_env() + "env -u RINGSIM_CLUSTER RINGSIM_NODE=node1 " + kCheck + " 0 100");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto kv = parse_kv(r.out);
  EXPECT_EQ(kv["uninitialized"], "yes");
  EXPECT_EQ(kv["count"], "8");
  EXPECT_EQ(kv["name"].rfind("ringside-sim ", 0), 0u) << kv["name"];
  EXPECT_EQ(kv["lookup_ok"], "1");
  EXPECT_EQ(kv["reasons"], "0");
  EXPECT_EQ(kv["sm_clock"], kv["max_sm_clock"]);
  EXPECT_EQ(kv["xid_wait"].find("Timeout"), 0u) << r.out;
}

TEST(SimNvml, ConfiguredCountersThrottleAndXid) {
  std::string cluster = write_temp("nvml", R"({
    "nodes": [{"name": "n1", "gpus": 4}],
    "nvml": {"node": "n1", "gpu": 2, "thermal_throttle": true, "ecc": {"volatile_uncorrected": 3},
             "remapped_rows": {"correctable": 1, "uncorrectable": 2, "pending": true}, "pcie_replays": 17,
             "xid": {"code": 79, "at_seconds": 0.3}}})");
  auto r = run_command(sim_env() + "RINGSIM_NODE=n1 RINGSIM_CLUSTER=" + cluster + " " + kCheck +
                       " 2 5000");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto kv = parse_kv(r.out);
  EXPECT_EQ(kv["count"], "4");
  unsigned long long reasons = std::strtoull(kv["reasons"].c_str(), nullptr, 10);
  EXPECT_NE(reasons & 0x20ull, 0u) << "sw thermal slowdown bit";
  EXPECT_NE(reasons & 0x40ull, 0u) << "hw thermal slowdown bit";
  EXPECT_LT(std::atoi(kv["sm_clock"].c_str()), std::atoi(kv["max_sm_clock"].c_str()));
  EXPECT_GE(std::atoi(kv["temperature"].c_str()), 85);
  EXPECT_EQ(kv["ecc_volatile_uncorrected"], "3");
  EXPECT_EQ(kv["remapped_correctable"], "1");
  EXPECT_EQ(kv["remapped_uncorrectable"], "2");
  EXPECT_EQ(kv["remap_pending"], "1");
  EXPECT_EQ(kv["pcie_replays"], "17");
  EXPECT_EQ(kv["xid"], "79") << r.out;
  EXPECT_GE(std::atof(kv["xid_after_ms"].c_str()), 250.0) << "XID arrives at its configured time";

  // Another GPU of the node is healthy and sees no XID.
  r = run_command(sim_env() + "RINGSIM_NODE=n1 RINGSIM_CLUSTER=" + cluster + " " + kCheck +
                  " 1 400");
  kv = parse_kv(r.out);
  EXPECT_EQ(kv["reasons"], "0");
  EXPECT_EQ(kv["pcie_replays"], "0");
  EXPECT_EQ(kv.count("xid"), 0u) << r.out;
}

}  // namespace
