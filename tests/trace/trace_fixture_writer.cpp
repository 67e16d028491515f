// Writes a small trace with known values (tests/trace/trace_test_util.cpp) for
// the h5py contract test: `trace_fixture_writer DIR` prints the file path.
#include <cstdio>
#include <vector>

#include "ringside/trace_writer.h"
#include "trace_test_util.h"

int main(int argc, char** argv) {
  using namespace ringside::trace;
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_fixture_writer DIR\n");
    return 2;
  }
  const std::string path = std::string(argv[1]) + "/" + trace_file_name("fixture", 5);
  auto w = TraceWriter::create(path, testing::sample_meta("fixture", 5, 8));
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", w.message().c_str());
    return 1;
  }
  std::vector<OpRecord> ops;
  for (uint64_t i = 0; i < 100; ++i) ops.push_back(testing::make_op(i));
  SampleRecord s = testing::make_sample(3);
  EventRecord e = testing::make_event(4);
  CommRecord c = testing::make_comm(1);
  OpRecord stuck = testing::make_op(100);
  stuck.status = static_cast<uint8_t>(OpStatus::kDevicePending);
  StatsRecord st{};
  st.ops_recorded = 101;
  bool ok = w.value()->append(ops).ok() && w.value()->append(std::span(&s, 1)).ok() &&
            w.value()->append(std::span(&e, 1)).ok() && w.value()->append(std::span(&c, 1)).ok() &&
            w.value()->flush(std::span(&stuck, 1), st).ok() && w.value()->close().ok();
  if (!ok) return 1;
  std::printf("%s\n", path.c_str());
  return 0;
}
