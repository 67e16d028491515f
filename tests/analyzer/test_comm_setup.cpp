// Communicator set-up between ops is not compute.  A job makes its communicators after
// its first ops (PyTorch makes a group's NCCL communicator at its first collective, and
// a unique-id group's first member makes and shares the id while the others wait): the
// gap before a rank's first op on a new communicator holds that set-up, longer on the
// members that make the ids.  Eight ranks on four nodes, one world communicator and a
// tensor-parallel pair per node, three steps of equal work: position 0 of each pair takes
// 110 ms longer to make its pair's communicator.  That gap is set-up, and no imbalance is
// named; the same gaps without a communicator made in them are compute, and the ranks
// that computed longer are named.
#include <gtest/gtest.h>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 8, kPerNode = 2, kSteps = 3;
constexpr uint64_t kWorld = 0xB000;

uint64_t pair_comm(int r) {
  return 0xA000 + static_cast<uint64_t>(r / 2);
}

// Writes the job; `made_in_gap`: each rank's pair communicator is created in the gap
// before its first op on it (else before the job's first op).  Returns its analysis.
Report setup_job(const std::string& dir, bool made_in_gap) {
  const int64_t setup_end = 13 * kMs;  // the world communicator's last set-up op ends
  const int64_t first_pair_op = setup_end + 280 * kMs;
  for (int r = 0; r < kRanks; ++r) {
    const bool maker = r % 2 == 0;
    // Position 1 arrives at its pair's first op once its communicator is made, and
    // waits there for position 0, which made the id first.
    const int64_t arrives = maker ? first_pair_op : setup_end + 170 * kMs;
    trace::CommRecord comms[2] = {hand_comm(kWorld, kRanks, r), hand_comm(pair_comm(r), 2, r % 2)};
    comms[0].t_ns = kMs;
    comms[1].t_ns = made_in_gap ? arrives - kMs : kMs;
    std::vector<trace::OpRecord> ops;
    ops.push_back(hand_op(trace::OpKind::kAllGather, kWorld, 0, 10 * kMs, 11 * kMs));
    ops.push_back(hand_op(trace::OpKind::kAllGather, kWorld, 1, 12 * kMs, setup_end));
    ops.push_back(
        hand_op(trace::OpKind::kAllReduce, pair_comm(r), 0, arrives, first_pair_op + kMs));
    int64_t t = first_pair_op + kMs;
    uint64_t pair_seq = 1;
    for (int step = 0; step < kSteps; ++step) {
      for (int half = 0; half < 2; ++half) {
        t += 30 * kMs;
        ops.push_back(hand_op(trace::OpKind::kAllReduce, pair_comm(r), pair_seq++, t, t + kMs));
        t += kMs;
      }
      ops.push_back(hand_op(trace::OpKind::kAllReduce, kWorld, 2 + static_cast<uint64_t>(step), t,
                            t + 2 * kMs));
      t += 2 * kMs;
    }
    write_hand_trace(dir, "setup", r, kRanks, kPerNode, comms, ops, t + kMs);
  }
  return analyze_quietly(dir);
}

TEST(CommSetup, TheGapInWhichARankMadeACommunicatorIsNotItsCompute) {
  TempDir dir("comm-setup");
  const Report r = setup_job(dir.path(), true);
  EXPECT_EQ(find_kind(r, "imbalance"), nullptr) << find_kind(r, "imbalance")->evidence;
  EXPECT_EQ(r.verdict, "healthy");
}

TEST(CommSetup, TheSameGapWithoutACommunicatorMadeInItIsCompute) {
  TempDir dir("comm-no-setup");
  const Report r = setup_job(dir.path(), false);
  const Finding* f = find_kind(r, "imbalance", "structural");
  ASSERT_NE(f, nullptr) << r.verdict;
  EXPECT_EQ(f->ranks, (std::vector<int64_t>{0, 2, 4, 6})) << f->evidence;
}

}  // namespace
}  // namespace ringside::analysis::test
