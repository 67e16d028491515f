// A launcher's teardown SIGKILLs the ranks of a job one of whose ranks crashed, and a
// kill can land inside a rank's flush: its op rows reached the file, its comm table and
// /stats row did not (NCCL's tests, killed within their first second, do this about one
// run in five).  Such a file is a rank whose trace ends at its last complete flush, here
// before any: no rank is named corrupt or missing for it, and the crash is the dead
// rank's.  Written op by op, the cut made on the closed files.
#include <gtest/gtest.h>

#include <csignal>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 4, kDead = 2, kLastOp = 10;
constexpr uint64_t kWorld = 0x7600;
constexpr int64_t kT0 = 1000 * kMs;

// Rank kDead aborts after op kLastOp - 1; the others enter op kLastOp, wait in it and
// are ended by the launcher's SIGTERM.
void write_job(const std::string& dir) {
  const int64_t crash_at = kT0 + kLastOp * 20 * kMs;
  for (int r = 0; r < kRanks; ++r) {
    std::vector<trace::OpRecord> ops =
        hand_ops(trace::OpKind::kBroadcast, kWorld, kLastOp, kT0, 20 * kMs, 5 * kMs);
    std::vector<trace::OpRecord> pending;
    trace::EventRecord ended =
        hand_event(trace::EventKind::kSignal, crash_at + 300 * kMs, SIGTERM, "SIGTERM");
    if (r == kDead) {
      ended = hand_event(trace::EventKind::kSignal, crash_at, SIGABRT, "SIGABRT");
    } else {
      trace::OpRecord stuck =
          hand_op(trace::OpKind::kBroadcast, kWorld, kLastOp, crash_at, trace::kUnknownTime);
      stuck.status = static_cast<uint8_t>(trace::OpStatus::kDevicePending);
      pending.push_back(stuck);
    }
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    write_hand_trace(dir, "cut", r, kRanks, 2, {&comm, 1}, ops, ended.t_ns + 10 * kMs, 0, true,
                     pending, {&ended, 1});
  }
}

TEST(CutShortFlush, ARankKilledInItsFirstFlushIsNotBlamedForTheCrash) {
  for (int cut : {0, 3}) {
    TempDir dir("cut-flush");
    write_job(dir.path());
    // As a kill during its only flush leaves it: /ops written, /comms and /stats not.
    cut_table(dir.path(), cut, trace::kCommsDataset, 0);
    cut_table(dir.path(), cut, trace::kStatsDataset, 0);
    const Report rep = analyze_quietly(dir.path());
    EXPECT_EQ(rep.verdict, "hung") << "cut rank " << cut;
    ASSERT_EQ(rep.findings.size(), 1u) << "cut rank " << cut << ": " << rep.findings[0].evidence;
    EXPECT_EQ(rep.findings[0].subkind, "dead_rank") << rep.findings[0].evidence;
    EXPECT_EQ(rep.findings[0].ranks, std::vector<int64_t>{kDead}) << rep.findings[0].evidence;
    EXPECT_TRUE(rep.missing_ranks.empty()) << "cut rank " << cut;
    for (const std::string& w : rep.warnings) {
      EXPECT_EQ(w.find("corrupt"), std::string::npos) << w;
      EXPECT_EQ(w.find("not used"), std::string::npos) << w;
    }
  }
}

}  // namespace
}  // namespace ringside::analysis::test
