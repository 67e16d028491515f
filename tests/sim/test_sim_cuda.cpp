// A program linked normally against NVIDIA's libcudart/libcuda runs on the sim.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "sim_test_util.h"

using namespace ringside::sim::test;

namespace {

const std::string kCheck = SIM_CUDA_CHECK_PATH;

double hostfunc_ms(const std::string& env, int ms) {
  auto r = run_command(sim_env() + env + " " + kCheck + " hostfunc_ms " + std::to_string(ms));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return std::atof(r.out.c_str());
}

// The least of three: a loaded machine lengthens some runs, never shortens one.
double least_hostfunc_ms(const std::string& env, int ms) {
  return std::min({hostfunc_ms(env, ms), hostfunc_ms(env, ms), hostfunc_ms(env, ms)});
}

TEST(SimCuda, ProgramLinkedAgainstRealCudartRunsOnTheSim) {
  auto ldd = run_command(sim_env() + "ldd " + kCheck);
  EXPECT_NE(ldd.out.find(std::string(RINGSIDE_SIM_LIB_DIR_STR) + "/libcudart.so.13"),
            std::string::npos)
      << ldd.out;
  auto r = run_command(sim_env() + "env -u RINGSIM_CLUSTER " + kCheck + " basic 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 failures"), std::string::npos) << r.out;
}

TEST(SimCuda, EventsTimeHostFunctions) {
  double t = hostfunc_ms("", 50);
  EXPECT_GE(t, 45.0);
  EXPECT_LT(t, 5000.0);
}

// NVML's utilization.gpu is the share of time the process's streams ran work on the
// GPU: 0 over a span without any, most of a span inside one long task (a loaded machine
// may delay the reading, never make an idle GPU busy); a cluster file's value wins.
TEST(SimCuda, NvmlUtilizationFollowsStreamWork) {
  auto r = run_command(sim_env() + "RINGSIM_NODE=node1 " + kCheck + " utilization");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  unsigned idle = 999, busy = 999;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "idle=%u busy=%u", &idle, &busy), 2) << r.out;
  EXPECT_EQ(idle, 0u) << r.out;
  EXPECT_GT(busy, 0u) << r.out;
  EXPECT_LE(busy, 100u) << r.out;
  std::string fixed = write_temp("util", R"({"nodes": [{"name": "node1", "gpus": 2}],
                 "nvml": {"node": "node1", "gpu": 0, "utilization_gpu_pct": 37}})");
  r = run_command(sim_env() + "RINGSIM_NODE=node1 RINGSIM_CLUSTER=" + fixed + " " + kCheck +
                  " utilization");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "idle=37 busy=37\n");
}

TEST(SimCuda, SlowGpuStretchesStreamWork) {
  std::string cluster = write_temp(
      "slow_gpu", R"({"faults": {"slow_gpu": {"node": "node1", "gpu": 0, "factor": 5}}})");
  double base = least_hostfunc_ms("RINGSIM_NODE=node1", 40);
  double slow = least_hostfunc_ms("RINGSIM_NODE=node1 RINGSIM_CLUSTER=" + cluster, 40);
  EXPECT_GE(slow, 2.0 * base) << "base " << base << " ms, slow " << slow << " ms";
  // Another GPU of the same node is not affected.
  std::string other = write_temp(
      "slow_gpu1", R"({"faults": {"slow_gpu": {"node": "node1", "gpu": 1, "factor": 5}}})");
  double unaffected = least_hostfunc_ms("RINGSIM_NODE=node1 RINGSIM_CLUSTER=" + other, 40);
  EXPECT_LT(unaffected, 2.0 * base)
      << "base " << base << " ms, other GPU slowed: " << unaffected << " ms";
}

TEST(SimCuda, BadClusterFileStopsTheProgramWithAClearMessage) {
  std::string cluster =
      write_temp("bad", R"({"faults": {"slow_gpu": {"node": "node1", "gpu": 0, "factr": 5}}})");
  auto r =
      run_command(sim_env() + "RINGSIM_CLUSTER=" + cluster + " " + kCheck + " hostfunc_ms 1 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(cluster), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("faults.slow_gpu.factr"), std::string::npos) << r.out;
}

// /dev/zero used to be read until memory ran out and the program aborted.
TEST(SimCuda, ClusterFileThatIsADeviceStopsTheProgramWithAClearMessage) {
  auto r = run_command(sim_env() + "RINGSIM_CLUSTER=/dev/zero " + kCheck + " hostfunc_ms 1 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("/dev/zero (RINGSIM_CLUSTER): is a character device, not a regular file"),
            std::string::npos)
      << r.out;
}

TEST(SimCuda, DeviceCountFollowsTheClusterFile) {
  std::string cluster = write_temp("two_gpus", R"({"nodes": [{"name": "small", "gpus": 2}]})");
  auto r = run_command(sim_env() + "RINGSIM_NODE=small RINGSIM_CLUSTER=" + cluster + " " + kCheck +
                       " basic 2>&1");
  EXPECT_NE(r.out.find("FAIL 8 devices by default, got 2"), std::string::npos) << r.out;
}

}  // namespace
