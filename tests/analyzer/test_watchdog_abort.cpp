// A hang under a framework's watchdog (PyTorch's NCCL timeout): rank 1 never enters an
// all-reduce; after waiting in it, the other ranks abort the communicator and die of
// SIGABRT, while rank 1 lives on until the launcher's SIGTERM.  The aborts and deaths
// answer the wait: the hang is rank 1's, and no rank is named dead.  An abort that comes
// without such a wait is still a death of its own.  Written op by op.
#include <gtest/gtest.h>

#include <csignal>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 4, kStuckOp = 10;
constexpr uint64_t kWorld = 0x7500;
constexpr int64_t kT0 = 1000 * kMs;

// The waiting ranks abort `abort_after` after entering the stuck op, then die of SIGABRT.
void write_job(const std::string& dir, int64_t abort_after) {
  const int64_t stuck_at = kT0 + kStuckOp * 20 * kMs;
  for (int r = 0; r < kRanks; ++r) {
    std::vector<trace::OpRecord> ops =
        hand_ops(trace::OpKind::kAllReduce, kWorld, kStuckOp, kT0, 20 * kMs, 5 * kMs);
    std::vector<trace::OpRecord> pending;
    std::vector<trace::EventRecord> events;
    int64_t end = stuck_at + 20'000 * kMs;  // rank 1: the launcher's SIGTERM
    if (r != 1) {
      // Started on the device, ended by the abort: abandoned, in /ops and in /pending.
      const int64_t abort_at = stuck_at + abort_after;
      trace::OpRecord op =
          hand_op(trace::OpKind::kAllReduce, kWorld, kStuckOp, stuck_at, abort_at + kMs);
      op.status = static_cast<uint8_t>(trace::OpStatus::kAbandoned);
      ops.push_back(op);
      pending.push_back(op);
      events.push_back(
          hand_event(trace::EventKind::kCommAbort, abort_at, 0, "ncclCommAbort", kWorld));
      events.push_back(
          hand_event(trace::EventKind::kSignal, abort_at + 2 * kMs, SIGABRT, "SIGABRT"));
      end = abort_at + 50 * kMs;
    } else {
      events.push_back(hand_event(trace::EventKind::kSignal, end - kMs, SIGTERM, "SIGTERM"));
    }
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    write_hand_trace(dir, "watchdog", r, kRanks, 2, {&comm, 1}, ops, end, 0, false, pending,
                     events);
  }
}

TEST(WatchdogAbort, RanksThatGaveUpWaitingAreVictimsOfTheRankTheyWaitedFor) {
  TempDir dir("watchdog-abort");
  write_job(dir.path(), 8'000 * kMs);  // more than --hang-wait (5 s)
  const Report rep = analyze_quietly(dir.path());
  EXPECT_EQ(rep.verdict, "hung");
  ASSERT_EQ(rep.findings.size(), 1u);
  const Finding& f = rep.findings[0];
  EXPECT_EQ(f.subkind, "missing_rank") << f.evidence;
  EXPECT_EQ(f.ranks, std::vector<int64_t>{1}) << f.evidence;
  EXPECT_EQ(f.seq, static_cast<uint64_t>(kStuckOp));
  EXPECT_NE(f.evidence.find("Ranks 0, 2, 3 then gave up waiting"), std::string::npos) << f.evidence;
}

TEST(WatchdogAbort, AnAbortWithoutALongWaitIsStillADeath) {
  TempDir dir("early-abort");
  write_job(dir.path(), 500 * kMs);
  const Report rep = analyze_quietly(dir.path());
  EXPECT_EQ(rep.verdict, "hung");
  bool dead = false;
  for (const Finding& f : rep.findings) {
    dead = dead || f.subkind == "dead_rank";
    // Roots merged into one finding list the ranks waiting in one op once.
    for (size_t i = 0; i < f.consequences.size(); ++i) {
      for (size_t j = i + 1; j < f.consequences.size(); ++j) {
        const Consequence &a = f.consequences[i], &b = f.consequences[j];
        EXPECT_FALSE(a.comm == b.comm && a.seq == b.seq && a.op == b.op)
            << f.subkind << ": " << a.op << " #" << a.seq.value_or(0) << " listed twice";
      }
    }
  }
  EXPECT_TRUE(dead) << "aborts 0.5 s into a wait are no watchdog's";
}

}  // namespace
}  // namespace ringside::analysis::test
