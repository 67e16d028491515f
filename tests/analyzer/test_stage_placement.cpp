// A healthy pipeline whose stages place the same work differently around the same
// collectives, as 1F1B schedules and host-side launches do: stage 0 computes before
// its tensor-parallel all-reduce and then sends; stage 1 waits in the matching
// receive, all-reduces at once and computes after.  Both stages compute as long per
// step, so nothing is wrong, although the gap before each tensor-parallel all-reduce
// is ~5 ms on stage 0 and ~0 on stage 1.  Written op by op (ringside synth places
// compute alike on every stage).
#include <gtest/gtest.h>

#include <random>

#include "ringside/trace_writer.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int kRanks = 8, kStageSize = 4, kSteps = 40;
constexpr uint64_t kStream = 0x7f0000001000ull;

// tp groups {0,1} {2,3} (stage 0) and {4,5} {6,7} (stage 1); pp pairs {r, r+4}.
uint64_t tp_comm(int rank) {
  return 0x7100 + static_cast<uint64_t>(rank / 2);
}
uint64_t pp_comm(int rank) {
  return 0x7200 + static_cast<uint64_t>(rank % kStageSize);
}

trace::OpRecord op(trace::OpKind kind, uint64_t comm, uint64_t seq, int64_t start, int64_t end) {
  trace::OpRecord r{};
  r.t_enter_ns = start - 30'000;
  r.t_exit_ns = start - 20'000;
  r.t_dev_start_ns = start;
  r.t_dev_end_ns = end;
  r.comm_id = comm;
  r.seq = seq;
  r.count = 1 << 20;
  r.bytes = 4 << 20;
  r.stream = kStream;
  r.peer = -1;
  r.op = static_cast<uint8_t>(kind);
  r.dtype = 7;
  r.flags = trace::kFlagDeviceTimed;
  r.status = static_cast<uint8_t>(trace::OpStatus::kComplete);
  return r;
}

trace::CommRecord comm_record(uint64_t id, int nranks, int rank_in_comm) {
  trace::CommRecord c{};
  c.t_ns = 100 * kMs;
  c.comm_id = id;
  c.color = -1;
  c.key = -1;
  c.nranks = nranks;
  c.rank = rank_in_comm;
  c.origin = static_cast<uint8_t>(trace::CommOrigin::kInitRank);
  return c;
}

// Writes the job's traces into `dir`; compute times jitter by +-`jitter` per rank and step.
void write_pipeline(const std::string& dir, uint64_t seed, double jitter) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-jitter, jitter);
  auto compute = [&] { return static_cast<int64_t>((5.0 + u(rng)) * kMs); };
  std::vector<std::vector<trace::OpRecord>> ops(kRanks);
  std::vector<int64_t> t(kRanks, 1000 * kMs);  // each rank's stream is free from here
  for (int step = 0; step < kSteps; ++step) {
    const auto seq = static_cast<uint64_t>(step);
    // Stage 0: compute, tensor-parallel all-reduce, send to stage 1.
    std::vector<int64_t> send_at(kStageSize);
    for (int g = 0; g < kStageSize; g += 2) {
      const int64_t a = t[g] + compute(), b = t[g + 1] + compute();
      const int64_t end = std::max(a, b) + kMs;
      ops[g].push_back(op(trace::OpKind::kAllReduce, tp_comm(g), seq, a, end));
      ops[g + 1].push_back(op(trace::OpKind::kAllReduce, tp_comm(g + 1), seq, b, end));
      send_at[g] = send_at[g + 1] = end + 20'000;
    }
    // Stage 1: the receive posted when its stream freed, then the all-reduce at once,
    // then its compute.
    for (int q = 0; q < kStageSize; ++q) {
      const int r = q + kStageSize;
      const int64_t end = std::max(send_at[q], t[r]) + kMs / 2;
      trace::OpRecord send = op(trace::OpKind::kSend, pp_comm(q), seq, send_at[q], end);
      send.peer = 1;
      send.peer_seq = static_cast<uint32_t>(step);
      trace::OpRecord recv = op(trace::OpKind::kRecv, pp_comm(q), seq, t[r], end);
      recv.peer = 0;
      recv.peer_seq = static_cast<uint32_t>(step);
      ops[q].push_back(send);
      ops[r].push_back(recv);
      t[q] = end;
      t[r] = end;
    }
    for (int g = kStageSize; g < kRanks; g += 2) {
      const int64_t a = t[g] + 10'000, b = t[g + 1] + 10'000;
      const int64_t end = std::max(a, b) + kMs;
      ops[g].push_back(op(trace::OpKind::kAllReduce, tp_comm(g), seq, a, end));
      ops[g + 1].push_back(op(trace::OpKind::kAllReduce, tp_comm(g + 1), seq, b, end));
      t[g] = end + compute();
      t[g + 1] = end + compute();
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    trace::TraceMeta meta;
    meta.schema_version = trace::kSchemaVersion;
    meta.producer = "test";
    meta.job_id = "placement";
    meta.rank = r;
    meta.local_rank = r % 2;
    meta.world_size = kRanks;
    meta.rank_source = "test";
    meta.node = "node" + std::to_string(1 + r / 2);
    meta.hostname = meta.node;
    meta.pid = 1000 + r;
    meta.gpu_device = r % 2;
    meta.gpu_name = "test GPU";
    meta.gpu_uuid = "GPU-placement-" + std::to_string(r);
    meta.nccl_version = 22809;
    meta.cuda_driver_version = 13000;
    meta.clock_realtime_ns = 1'700'000'000'000'000'000;
    meta.clock_monotonic_ns = 0;
    const std::string path = dir + "/" + trace::trace_file_name("placement", r);
    auto w = trace::TraceWriter::create(path, meta);
    ASSERT_TRUE(w.ok()) << w.message();
    const std::vector<trace::CommRecord> comms = {comm_record(tp_comm(r), 2, r % 2),
                                                  comm_record(pp_comm(r), 2, r / kStageSize)};
    ASSERT_TRUE(w.value()->append(std::span<const trace::CommRecord>(comms)).ok());
    ASSERT_TRUE(w.value()->append(std::span<const trace::OpRecord>(ops[r])).ok());
    trace::EventRecord shutdown{};
    shutdown.t_ns = t[r] + 10 * kMs;
    shutdown.kind = static_cast<uint32_t>(trace::EventKind::kShutdown);
    shutdown.device = -1;
    std::snprintf(shutdown.text, sizeof shutdown.text, "%s", "tracing stopped at exit");
    ASSERT_TRUE(w.value()->append(std::span<const trace::EventRecord>(&shutdown, 1)).ok());
    trace::StatsRecord stats{};
    stats.t_ns = shutdown.t_ns;
    stats.ops_recorded = ops[r].size();
    ASSERT_TRUE(w.value()->flush({}, stats).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
}

TEST(StagePlacement, SameWorkPlacedDifferentlyPerStageIsHealthy) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    for (double jitter : {0.0, 0.5}) {
      TempDir dir("placement");
      write_pipeline(dir.path(), seed, jitter);
      AnalyzeOptions options;
      options.progress = false;
      auto report = analyze_directory(dir.path(), options);
      ASSERT_TRUE(report.ok()) << report.message();
      EXPECT_EQ(report.value().verdict, "healthy") << "seed " << seed << " jitter " << jitter;
      for (const auto& f : report.value().findings) {
        ADD_FAILURE() << "seed " << seed << " jitter " << jitter << " " << f.kind << "/"
                      << f.subkind << ": " << f.evidence;
      }
    }
  }
}

}  // namespace
}  // namespace ringside::analysis::test
