// Loading every rank's trace of a run for assertions.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "process_util.h"
#include "ringside/trace_reader.h"

namespace ringside::probe::testing {

struct RankTrace {
  std::string path;
  trace::TraceMeta meta;
  std::vector<trace::OpRecord> ops;
  std::vector<trace::OpRecord> pending;
  std::vector<trace::EventRecord> events;
  std::vector<trace::CommRecord> comms;
  std::vector<trace::StatsRecord> stats;

  std::map<uint64_t, std::vector<trace::OpRecord>> ops_by_comm() const {
    std::map<uint64_t, std::vector<trace::OpRecord>> m;
    for (const auto& o : ops) m[o.comm_id].push_back(o);
    return m;
  }
  bool has_event(trace::EventKind kind) const {
    for (const auto& e : events) {
      if (e.kind == static_cast<uint32_t>(kind)) return true;
    }
    return false;
  }
};

inline std::vector<RankTrace> load_traces(const std::string& dir) {
  std::vector<RankTrace> out;
  if (!std::filesystem::is_directory(dir)) return out;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".h5") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto reader = trace::TraceReader::open(f);
    EXPECT_TRUE(reader.ok()) << f << ": " << reader.message();
    if (!reader.ok()) continue;
    RankTrace t;
    t.path = f;
    t.meta = (*reader)->meta();
    t.ops.resize((*reader)->op_count());
    auto n = (*reader)->read_ops(0, t.ops);
    EXPECT_TRUE(n.ok()) << n.message();
    auto pending = (*reader)->last_pending();
    if (pending.ok()) t.pending = pending.value();
    auto events = (*reader)->events();
    if (events.ok()) t.events = events.value();
    auto comms = (*reader)->comms();
    if (comms.ok()) t.comms = comms.value();
    auto stats = (*reader)->stats();
    if (stats.ok()) t.stats = stats.value();
    out.push_back(std::move(t));
  }
  return out;
}

// Paths of the programs under test (from CMake).
struct Paths {
  static std::string probe() { return RINGSIDE_TEST_PROBE_SO; }
  static std::string simrun() { return RINGSIDE_TEST_SIMRUN; }
  static std::string app() { return RINGSIDE_TEST_APP; }
  static std::string train() { return RINGSIDE_TEST_TRAIN; }
  static std::string ringside() { return RINGSIDE_TEST_RINGSIDE; }
  static std::string nccl_bench() { return RINGSIDE_TEST_NCCL_BENCH; }
  static std::string sim_env() {
    return std::string("LD_LIBRARY_PATH=") + RINGSIDE_TEST_SIM_LIB_DIR;
  }
};

// Fails (naming it) when a program the test needs has not been built.
#define RINGSIDE_REQUIRE_FILE(path)                                           \
  do {                                                                        \
    ASSERT_TRUE(std::filesystem::exists(path)) << (path) << " was not built"; \
  } while (0)

}  // namespace ringside::probe::testing
