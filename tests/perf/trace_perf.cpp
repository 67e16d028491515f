// Writes a realistic synthetic trace of N ops, then reads it back, and prints
// bytes per op and records per second as JSON lines for scripts/perf.
//   trace_perf write PATH N   |   trace_perf read PATH
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"

namespace {

using namespace ringside::trace;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A data-parallel step: compute, then 20 gradient buckets on the world comm
// and 4 on a tensor-parallel comm, with realistic jitter on every time.
std::vector<OpRecord> make_ops(uint64_t n) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> jitter(0.0, 1.0);
  std::vector<OpRecord> ops(n);
  int64_t t = 1'000'000;
  uint64_t seq_world = 0, seq_tp = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t in_step = i % 24;
    if (in_step == 0) t += 80'000'000 + static_cast<int64_t>(2'000'000 * jitter(rng));
    const bool tp = in_step >= 20;
    const uint64_t bytes = tp ? (8ULL << 20) : (25ULL << 20);
    OpRecord& op = ops[i];
    op.t_enter_ns = t;
    op.t_exit_ns = t + 4'000 + static_cast<int64_t>(std::abs(800 * jitter(rng)));
    const int64_t wait = static_cast<int64_t>(std::abs(300'000 * jitter(rng)));
    const int64_t xfer = static_cast<int64_t>(static_cast<double>(bytes) / 20.0) +
                         static_cast<int64_t>(std::abs(50'000 * jitter(rng)));
    op.t_dev_start_ns = t + 10'000 + static_cast<int64_t>(std::abs(2'000 * jitter(rng)));
    op.t_dev_end_ns = op.t_dev_start_ns + wait + xfer;
    op.comm_id = tp ? 0x51c3a9e77d0f1b22ULL : 0x9a0b3c4d5e6f7081ULL;
    op.seq = tp ? seq_tp++ : seq_world++;
    op.count = bytes / 2;
    op.bytes = bytes;
    op.stream = 0x55d0c0a1b000ULL;
    op.group_id = 0;
    op.peer = -1;
    op.op = 1;
    op.dtype = 9;  // bfloat16
    op.flags = kFlagDeviceTimed;
    op.status = 0;
    t = op.t_exit_ns + 200'000 + static_cast<int64_t>(std::abs(100'000 * jitter(rng)));
  }
  return ops;
}

int do_write(const std::string& path, uint64_t n) {
  std::vector<OpRecord> ops = make_ops(n);
  TraceMeta meta;
  meta.producer = "perf";
  meta.job_id = "perf";
  meta.world_size = 1;
  stamp_clock_reference(meta);
  const auto t0 = Clock::now();
  auto w = TraceWriter::create(path, meta);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", w.message().c_str());
    return 1;
  }
  // Append in the probe's batch size, flushing once per simulated second.
  constexpr size_t kBatch = 1024;
  for (size_t i = 0; i < ops.size(); i += kBatch) {
    size_t m = std::min(kBatch, ops.size() - i);
    if (!w.value()->append(std::span(ops).subspan(i, m)).ok()) return 1;
    if ((i / kBatch) % 64 == 63 && !w.value()->flush({}, {}).ok()) return 1;
  }
  if (!w.value()->close().ok()) return 1;
  const double secs = seconds_since(t0);
  const auto size = std::filesystem::file_size(path);
  std::printf(
      "{\"metric\":\"trace_write\",\"ops\":%llu,\"seconds\":%.4f,\"records_per_s\":%.0f,"
      "\"file_bytes\":%llu,\"bytes_per_op\":%.2f,\"raw_record_bytes\":%zu}\n",
      static_cast<unsigned long long>(n), secs, static_cast<double>(n) / secs,
      static_cast<unsigned long long>(size), static_cast<double>(size) / static_cast<double>(n),
      sizeof(OpRecord));
  return 0;
}

int do_read(const std::string& path) {
  const auto t0 = Clock::now();
  auto r = TraceReader::open(path);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.message().c_str());
    return 1;
  }
  uint64_t n = 0;
  int64_t checksum = 0;
  auto s = r.value()->for_each_op_batch(65536, [&](std::span<const OpRecord> batch) {
    for (const OpRecord& op : batch) checksum += op.t_dev_end_ns - op.t_dev_start_ns;
    n += batch.size();
    return true;
  });
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  const double secs = seconds_since(t0);
  std::printf(
      "{\"metric\":\"trace_read\",\"ops\":%llu,\"seconds\":%.4f,\"records_per_s\":%.0f,"
      "\"checksum\":%lld}\n",
      static_cast<unsigned long long>(n), secs, static_cast<double>(n) / secs,
      static_cast<long long>(checksum));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "write") {
    char* end = nullptr;
    uint64_t n = std::strtoull(argv[3], &end, 10);
    if (*end != '\0' || n == 0) {
      std::fprintf(stderr, "trace_perf: N must be a positive integer, got '%s'\n", argv[3]);
      return 2;
    }
    return do_write(argv[2], n);
  }
  if (argc == 3 && std::string(argv[1]) == "read") return do_read(argv[2]);
  std::fprintf(stderr, "usage: trace_perf write PATH N | trace_perf read PATH\n");
  return 2;
}
