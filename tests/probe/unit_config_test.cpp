// The RINGSIDE_* spec table: defaults, good values, bad values and unknown names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm_registry.h"
#include "probe_config.h"

namespace ringside::probe {
namespace {

ConfigResult load(std::vector<std::string> vars) {
  std::vector<char*> env;
  for (auto& v : vars) env.push_back(v.data());
  env.push_back(nullptr);
  return load_config(env.data());
}

TEST(ProbeConfig, Defaults) {
  auto r = load({"PATH=/bin", "RANK=0"});
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.config.enable);
  EXPECT_TRUE(r.config.device_timing);
  EXPECT_DOUBLE_EQ(r.config.sample_hz, 2);
  EXPECT_DOUBLE_EQ(r.config.flush_interval_s, 1);
  EXPECT_DOUBLE_EQ(r.config.watchdog_timeout_s, 300);
  EXPECT_EQ(r.config.ring_size, 8192u);
  EXPECT_EQ(r.config.output_dir, "ringside-traces");
  EXPECT_NE(r.config.json.find("RINGSIDE_OUTPUT"), std::string::npos);
}

TEST(ProbeConfig, Values) {
  auto r = load({"RINGSIDE_OUTPUT=/tmp/t", "RINGSIDE_SAMPLE_HZ=0", "RINGSIDE_FLUSH_INTERVAL=250ms",
                 "RINGSIDE_WATCHDOG_TIMEOUT=2m", "RINGSIDE_DEVICE_TIMING=0",
                 "RINGSIDE_RING_SIZE=1024", "RINGSIDE_JOB_ID=j1", "RINGSIDE_NODE_NAME=n1"});
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.config.output_dir, "/tmp/t");
  EXPECT_DOUBLE_EQ(r.config.sample_hz, 0);
  EXPECT_DOUBLE_EQ(r.config.flush_interval_s, 0.25);
  EXPECT_DOUBLE_EQ(r.config.watchdog_timeout_s, 120);
  EXPECT_FALSE(r.config.device_timing);
  EXPECT_EQ(r.config.ring_size, 1024u);
  EXPECT_EQ(r.config.job_id, "j1");
  EXPECT_EQ(r.config.node_name, "n1");
}

TEST(ProbeConfig, BadValuesFallBackToDefaultsWithOneLineEach) {
  auto r =
      load({"RINGSIDE_SAMPLE_HZ=11", "RINGSIDE_FLUSH_INTERVAL=soon", "RINGSIDE_RING_SIZE=12abc",
            "RINGSIDE_DEVICE_TIMING=maybe", "RINGSIDE_WATCHDOG_TIMOUT=5"});
  ASSERT_EQ(r.errors.size(), 5u);
  EXPECT_DOUBLE_EQ(r.config.sample_hz, 2);
  EXPECT_DOUBLE_EQ(r.config.flush_interval_s, 1);
  EXPECT_EQ(r.config.ring_size, 8192u);
  EXPECT_TRUE(r.config.device_timing);
  std::string all;
  for (auto& e : r.errors) all += e + "\n";
  for (const char* name : {"RINGSIDE_SAMPLE_HZ", "RINGSIDE_FLUSH_INTERVAL", "RINGSIDE_RING_SIZE",
                           "RINGSIDE_DEVICE_TIMING", "RINGSIDE_WATCHDOG_TIMOUT"}) {
    EXPECT_NE(all.find(name), std::string::npos) << name << " not named in:\n" << all;
  }
}

TEST(ProbeConfig, EverySpecHasADescriptionAndAValidDefault) {
  for (const auto& spec : option_specs()) {
    EXPECT_NE(std::string(spec.description), "") << spec.name;
    EXPECT_TRUE(config::validate(spec, spec.default_value).ok()) << spec.name;
    EXPECT_EQ(std::string(spec.name).rfind("RINGSIDE_", 0), 0u) << spec.name;
  }
}

TEST(CommRegistry, FindInsertReplaceAndPeerSequences) {
  CommRegistry reg;
  CommState a;
  CommState b;
  int h1 = 0;
  int h2 = 0;
  EXPECT_EQ(reg.find(&h1), nullptr);
  ASSERT_TRUE(reg.insert(&h1, &a));
  ASSERT_TRUE(reg.insert(&h2, &b));
  EXPECT_EQ(reg.find(&h1), &a);
  EXPECT_EQ(reg.find(&h2), &b);
  ASSERT_TRUE(reg.insert(&h1, &b)) << "a reused handle gets the new communicator";
  EXPECT_EQ(reg.find(&h1), &b);

  a.nranks.store(4);
  EXPECT_EQ(a.next_p2p_seq(1, false), 0u);
  EXPECT_EQ(a.next_p2p_seq(1, false), 1u);
  EXPECT_EQ(a.next_p2p_seq(1, true), 0u) << "directions count separately";
  EXPECT_EQ(a.next_p2p_seq(2, false), 0u) << "peers count separately";
  EXPECT_EQ(a.next_p2p_seq(9, false), 0u) << "out-of-range peer";
}

}  // namespace
}  // namespace ringside::probe
