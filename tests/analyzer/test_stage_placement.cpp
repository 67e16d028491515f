// A healthy pipeline whose stages place the same work differently around the same
// collectives, as 1F1B schedules and host-side launches do: stage 0 computes before
// its tensor-parallel all-reduce and then sends; stage 1 waits in the matching
// receive, all-reduces at once and computes after.  Both stages compute as long per
// step, so nothing is wrong, although the gap before each tensor-parallel all-reduce
// is ~5 ms on stage 0 and ~0 on stage 1.  Written op by op (ringside synth places
// compute alike on every stage).
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 8, kStageSize = 4, kSteps = 40;
// tp groups {0,1} {2,3} (stage 0) and {4,5} {6,7} (stage 1); pp pairs {r, r+4}.
uint64_t tp_comm(int rank) {
  return 0x7100 + static_cast<uint64_t>(rank / 2);
}
uint64_t pp_comm(int rank) {
  return 0x7200 + static_cast<uint64_t>(rank % kStageSize);
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
      ops[g].push_back(hand_op(trace::OpKind::kAllReduce, tp_comm(g), seq, a, end));
      ops[g + 1].push_back(hand_op(trace::OpKind::kAllReduce, tp_comm(g + 1), seq, b, end));
      send_at[g] = send_at[g + 1] = end + 20'000;
    }
    // Stage 1: the receive posted when its stream freed, then the all-reduce at once,
    // then its compute.
    for (int q = 0; q < kStageSize; ++q) {
      const int r = q + kStageSize;
      const int64_t end = std::max(send_at[q], t[r]) + kMs / 2;
      trace::OpRecord send = hand_op(trace::OpKind::kSend, pp_comm(q), seq, send_at[q], end);
      send.peer = 1;
      send.peer_seq = static_cast<uint32_t>(step);
      trace::OpRecord recv = hand_op(trace::OpKind::kRecv, pp_comm(q), seq, t[r], end);
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
      ops[g].push_back(hand_op(trace::OpKind::kAllReduce, tp_comm(g), seq, a, end));
      ops[g + 1].push_back(hand_op(trace::OpKind::kAllReduce, tp_comm(g + 1), seq, b, end));
      t[g] = end + compute();
      t[g + 1] = end + compute();
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    const std::vector<trace::CommRecord> comms = {hand_comm(tp_comm(r), 2, r % 2),
                                                  hand_comm(pp_comm(r), 2, r / kStageSize)};
    write_hand_trace(dir, "placement", r, kRanks, 2, comms, ops[r], t[r] + 10 * kMs);
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
