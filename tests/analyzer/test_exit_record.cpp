// A process that ends without running its exit handlers (os._exit, as some frameworks'
// workers end; or a kill or crash right after its last collective) leaves a trace with
// no exit record.  In a job that otherwise ended normally, with no collective left
// waiting for it, that is no dead rank and no hang: the report notes it.  The same
// trace is still a death when the others were left waiting.  Written op by op.
#include <gtest/gtest.h>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 4, kQuiet = 1, kOps = 12;
constexpr uint64_t kWorld = 0x7700;
constexpr int64_t kT0 = 1000 * kMs;

// Every rank runs kOps all-reduces; with `left_waiting`, the others then enter one more,
// which rank kQuiet never does.
void write_job(const std::string& dir, bool left_waiting) {
  const int64_t done_at = kT0 + kOps * 20 * kMs;
  for (int r = 0; r < kRanks; ++r) {
    std::vector<trace::OpRecord> ops =
        hand_ops(trace::OpKind::kAllReduce, kWorld, kOps, kT0, 20 * kMs, 5 * kMs);
    std::vector<trace::OpRecord> pending;
    int64_t end = done_at + 50 * kMs;
    if (left_waiting && r != kQuiet) {
      trace::OpRecord stuck =
          hand_op(trace::OpKind::kAllReduce, kWorld, kOps, done_at, trace::kUnknownTime);
      stuck.status = static_cast<uint8_t>(trace::OpStatus::kDevicePending);
      ops.push_back(stuck);
      pending.push_back(stuck);
      end = done_at + 30'000 * kMs;
    }
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    write_hand_trace(dir, "exit", r, kRanks, 2, {&comm, 1}, ops, end, 0, false, pending);
  }
}

// Drops `rank`'s exit record, its trace's one event (write_job records no other), as a
// process that never ran the probe's exit handler leaves its trace.
void drop_exit_record(const std::string& dir, int rank) {
  cut_table(dir, rank, trace::kEventsDataset, 0);
}

TEST(ExitRecord, ARankThatEndedWithTheJobWithoutItIsNoted) {
  TempDir dir("exit-record");
  write_job(dir.path(), false);
  drop_exit_record(dir.path(), kQuiet);
  const Report rep = analyze_quietly(dir.path());
  EXPECT_EQ(rep.verdict, "healthy");
  for (const Finding& f : rep.findings)
    ADD_FAILURE() << f.kind << "/" << f.subkind << ": " << f.evidence;
  bool noted = false;
  for (const std::string& w : rep.warnings)
    noted = noted || (w.rfind("rank 1 ", 0) == 0 && w.find("no exit record") != std::string::npos);
  EXPECT_TRUE(noted) << "warnings: " << rep.warnings.size();
}

TEST(ExitRecord, ARankThatEndedWithoutItWhileOthersWaitedIsDead) {
  TempDir dir("exit-record-waited");
  write_job(dir.path(), true);
  drop_exit_record(dir.path(), kQuiet);
  const Report rep = analyze_quietly(dir.path());
  EXPECT_EQ(rep.verdict, "hung");
  ASSERT_FALSE(rep.findings.empty());
  EXPECT_EQ(rep.findings[0].kind, "hang") << rep.findings[0].evidence;
  EXPECT_EQ(rep.findings[0].ranks, std::vector<int64_t>{kQuiet}) << rep.findings[0].evidence;
  for (const std::string& w : rep.warnings)
    EXPECT_EQ(w.find("no exit record"), std::string::npos) << w;
}

}  // namespace
}  // namespace ringside::analysis::test
