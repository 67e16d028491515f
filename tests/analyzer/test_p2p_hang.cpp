// A send/recv ring that hangs, as NVIDIA's sendrecv_perf does when one GPU stalls: each
// rank sends to the next and receives from the previous in one ncclGroupStart/End, and
// the host runs ahead.  Rank 2's GPU starts its receive of round 10 and never completes
// it, though rank 1's send of that round completed; every other rank ends up waiting in
// a later round for a half that waits, through the ring, for rank 2.  A send completed
// on one side says nothing of the receive on the other, and a half whose peer is done
// waits only for what was grouped with it: the culprit is rank 2, not a "stuck
// transfer" between every pair of neighbours.  Also every transfer of a round stuck, a
// call that never returned while the others waited outside NCCL, and ncclGroupEnd calls
// that never returned (the probe's snapshot has the group's ops pending on the host).
// Written op by op.
#include <gtest/gtest.h>

#include <csignal>
#include <functional>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 4, kRounds = 14, kStallRound = 10;
constexpr uint64_t kWorld = 0x7400;

trace::OpRecord half(trace::OpKind kind, int peer, int round, int64_t start, int64_t end) {
  trace::OpRecord r = hand_op(kind, kWorld, 0, start, end);
  r.peer = peer;
  r.peer_seq = static_cast<uint32_t>(round);
  r.group_id = static_cast<uint32_t>(round + 1);
  r.flags |= trace::kFlagInGroup;
  return r;
}

// An outstanding half: entered at `enter`, started on the device at `start` (or not).
trace::OpRecord outstanding(trace::OpKind kind, int peer, int round, int64_t enter, int64_t start) {
  trace::OpRecord r = half(kind, peer, round, start, trace::kUnknownTime);
  r.t_enter_ns = enter;
  r.t_exit_ns = enter + 10'000;
  r.t_dev_start_ns = start;
  r.status = static_cast<uint8_t>(trace::OpStatus::kDevicePending);
  return r;
}

// One round of one rank, as `round` lays it out: its completed ops and those outstanding
// at the end.  The ring's rounds run 2 ms apart from t0, each entered 10 us after the
// last (the host runs ahead).
struct Round {
  int rank, k, next, prev;
  int64_t at, entered;
  std::vector<trace::OpRecord>& ops;
  std::vector<trace::OpRecord>& pending;
};
constexpr int64_t kT0 = 1000 * kMs;

// `events(rank)`: what each rank recorded besides its ops (none by default).
void write_ring(const std::string& dir, const std::function<void(Round&)>& round,
                const std::function<std::vector<trace::EventRecord>(int)>& events = nullptr) {
  for (int r = 0; r < kRanks; ++r) {
    std::vector<trace::OpRecord> ops, pending;
    for (int k = 0; k < kRounds; ++k) {
      Round x{r,
              k,
              (r + 1) % kRanks,
              (r + kRanks - 1) % kRanks,
              kT0 + k * 2 * kMs,
              kT0 + k * 10'000,
              ops,
              pending};
      round(x);
    }
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    const std::vector<trace::EventRecord> recorded =
        events ? events(r) : std::vector<trace::EventRecord>{};
    write_hand_trace(dir, "ring", r, kRanks, 2, {&comm, 1}, ops, kT0 + 40'000 * kMs, 0, false,
                     pending, recorded);
  }
}

// The rounds before kStallRound: both halves complete, 1 ms from the round's start.
bool completed_before_the_hang(Round& x) {
  if (x.k >= kStallRound) return false;
  x.ops.push_back(half(trace::OpKind::kSend, x.next, x.k, x.at, x.at + kMs));
  x.ops.push_back(half(trace::OpKind::kRecv, x.prev, x.k, x.at, x.at + kMs));
  return true;
}

// The job hung on one root: the first finding, a hang of `subkind` naming `ranks`; no other
// finding is a hang.  Returns that finding (an empty one when there is none).
Finding expect_one_root(const Report& rep, const std::string& subkind,
                        const std::vector<int64_t>& ranks) {
  EXPECT_EQ(rep.verdict, "hung");
  if (rep.findings.empty()) {
    ADD_FAILURE() << "no finding";
    return {};
  }
  const Finding& f = rep.findings[0];
  EXPECT_EQ(f.kind, "hang");
  EXPECT_EQ(f.subkind, subkind) << f.evidence;
  EXPECT_EQ(f.ranks, ranks) << f.evidence;
  for (size_t i = 1; i < rep.findings.size(); ++i) {
    if (rep.findings[i].kind == "hang")
      ADD_FAILURE() << "a second hang root: " << rep.findings[i].subkind << " "
                    << rep.findings[i].evidence;
  }
  return f;
}

TEST(P2PHang, AReceiveThatNeverCompletesIsItsRanksStallNotAStuckPairEverywhere) {
  TempDir dir("p2p-hang");
  write_ring(dir.path(), [](Round& x) {
    const auto send = trace::OpKind::kSend, recv = trace::OpKind::kRecv;
    const int64_t done = x.at + kMs, never = trace::kUnknownTime;
    if (completed_before_the_hang(x)) return;
    if (x.k == kStallRound) {
      // Every send of the round completes; so do the receives but rank 2's, which its
      // GPU started and never finished.
      x.ops.push_back(half(send, x.next, x.k, x.at, done));
      if (x.rank == 2) {
        x.pending.push_back(outstanding(recv, x.prev, x.k, x.entered, x.at));
      } else {
        x.ops.push_back(half(recv, x.prev, x.k, x.at, done));
      }
    } else {
      // The next round's send started (waiting for its receiver) but on rank 2.
      const bool started = x.k == kStallRound + 1 && x.rank != 2;
      x.pending.push_back(outstanding(send, x.next, x.k, x.entered, started ? x.at : never));
      x.pending.push_back(outstanding(recv, x.prev, x.k, x.entered, never));
    }
  });
  const Finding f = expect_one_root(analyze_quietly(dir.path()), "gpu_stall", {2});
  EXPECT_EQ(f.seq, static_cast<uint64_t>(kStallRound));
}

// Every transfer of a round stuck (the data never arrives): each rank's send started and
// its receive, grouped with it, waits behind it on a producer that times ops one by one.
// One launch runs both, so both started: every pair is stuck alike, one finding.
// With `events`, every rank also aborted the communicator 20 s in and died (a watchdog).
void expect_every_transfer_stuck(
    const std::string& name, const std::function<std::vector<trace::EventRecord>(int)>& events) {
  TempDir dir(name);
  write_ring(
      dir.path(),
      [](Round& x) {
        const auto send = trace::OpKind::kSend, recv = trace::OpKind::kRecv;
        if (completed_before_the_hang(x)) return;
        const int64_t started = x.k == kStallRound ? x.at : trace::kUnknownTime;
        x.pending.push_back(outstanding(send, x.next, x.k, x.entered, started));
        x.pending.push_back(outstanding(recv, x.prev, x.k, x.entered, trace::kUnknownTime));
      },
      events);
  const Report rep = analyze_quietly(dir.path());
  EXPECT_EQ(rep.verdict, "hung");
  ASSERT_EQ(rep.findings.size(), 1u);
  const Finding& f = rep.findings[0];
  EXPECT_EQ(f.subkind, "all_stuck") << f.evidence;
  EXPECT_EQ(f.ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(f.seq, static_cast<uint64_t>(kStallRound));
  // The pairs merged into one evidence, which ends as the merge writes it.
  EXPECT_NE(f.evidence.find("and so are 3 more send/recv pairs"), std::string::npos) << f.evidence;
  EXPECT_TRUE(f.evidence.ends_with("not a missing rank.")) << f.evidence;
}

TEST(P2PHang, EveryTransferOfARoundStuckIsOneAllStuckFinding) {
  expect_every_transfer_stuck("p2p-freeze", nullptr);
}

// Every rank's watchdog fired and every process died of SIGABRT: each gave up waiting, so
// none is a dead rank, and the one finding is still the stuck round (its ranks are every
// rank that gave up, so its evidence names no other).
TEST(P2PHang, EveryTransferStuckStaysOneFindingWhenEveryRankGaveUp) {
  expect_every_transfer_stuck("p2p-freeze-gave-up", [](int) {
    const int64_t abort_at = kT0 + 20'000 * kMs;
    return std::vector<trace::EventRecord>{
        hand_event(trace::EventKind::kCommAbort, abort_at, 0, "ncclCommAbort", kWorld),
        hand_event(trace::EventKind::kSignal, abort_at + kMs, SIGABRT, "SIGABRT")};
  });
}

// A rank whose call of a collective never returned, while the others completed it and
// then waited outside NCCL (an MPI barrier: nccl-tests between rounds): its final
// snapshot is no stale one, and the job hung on it although no traced op waited.
TEST(P2PHang, ACallThatNeverReturnedIsAHangWhenTheOthersWaitOutsideNccl) {
  TempDir dir("call-never-returned");
  for (int r = 0; r < kRanks; ++r) {
    std::vector<trace::OpRecord> ops, pending;
    for (uint64_t k = 0; k <= kStallRound; ++k) {
      const int64_t at = kT0 + static_cast<int64_t>(k) * 2 * kMs;
      trace::OpRecord op = hand_op(trace::OpKind::kAllReduce, kWorld, k, at, at + kMs);
      if (r == 2 && k == kStallRound) {
        op.t_exit_ns = op.t_dev_start_ns = op.t_dev_end_ns = trace::kUnknownTime;
        op.status = static_cast<uint8_t>(trace::OpStatus::kHostPending);
        pending.push_back(op);
      } else {
        ops.push_back(op);
      }
    }
    const trace::CommRecord comm = hand_comm(kWorld, kRanks, r);
    write_hand_trace(dir.path(), "call", r, kRanks, 2, {&comm, 1}, ops, kT0 + 40'000 * kMs, 0,
                     false, pending);
  }
  const Report rep = analyze_quietly(dir.path());
  EXPECT_EQ(rep.verdict, "hung");
  ASSERT_EQ(rep.findings.size(), 1u);
  EXPECT_EQ(rep.findings[0].subkind, "missing_rank") << rep.findings[0].evidence;
  EXPECT_EQ(rep.findings[0].ranks, std::vector<int64_t>{2});
  EXPECT_EQ(rep.findings[0].seq, static_cast<uint64_t>(kStallRound));
  EXPECT_NE(rep.findings[0].evidence.find("never returned"), std::string::npos)
      << rep.findings[0].evidence;
}

// An outstanding half of a group whose ncclGroupEnd has not returned: pending on the host.
trace::OpRecord in_group_end(trace::OpKind kind, int peer, int round, int64_t enter) {
  trace::OpRecord r = outstanding(kind, peer, round, enter, trace::kUnknownTime);
  r.t_exit_ns = trace::kUnknownTime;
  r.status = static_cast<uint8_t>(trace::OpStatus::kHostPending);
  return r;
}

// Rank 3's ncclGroupEnd of round 10 never returns (the sim's stop fault under sendrecv_perf);
// its neighbours launched their halves of the round, and their GPUs started them.
TEST(P2PHang, AGroupEndThatNeverReturnedIsItsRanksCallNotAGpuStall) {
  TempDir dir("group-end-stuck");
  write_ring(dir.path(), [](Round& x) {
    const auto send = trace::OpKind::kSend, recv = trace::OpKind::kRecv;
    if (completed_before_the_hang(x) || x.k > kStallRound) return;
    if (x.rank == 3) {
      x.pending.push_back(in_group_end(send, x.next, x.k, x.entered));
      x.pending.push_back(in_group_end(recv, x.prev, x.k, x.entered));
      return;
    }
    // Rank 2 sends to 3, rank 0 receives from 3: those halves wait; rank 1's exchange
    // with 0 and 2 completes.
    if (x.next == 3) {
      x.pending.push_back(outstanding(send, x.next, x.k, x.entered, x.at));
    } else {
      x.ops.push_back(half(send, x.next, x.k, x.at, x.at + kMs));
    }
    if (x.prev == 3) {
      x.pending.push_back(outstanding(recv, x.prev, x.k, x.entered, x.at));
    } else {
      x.ops.push_back(half(recv, x.prev, x.k, x.at, x.at + kMs));
    }
  });
  const Finding f = expect_one_root(analyze_quietly(dir.path()), "missing_rank", {3});
  EXPECT_NE(f.evidence.find("never launched"), std::string::npos) << f.evidence;
}

// Rank 1 never reaches round 10; its neighbours' ncclGroupEnd waits for it inside NCCL (a
// first exchange with a peer sets up the connection there, with the peer taking part), so
// their halves are pending on the host.  The hang is rank 1's, not theirs.
TEST(P2PHang, GroupEndsWaitingForAPeerThatNeverCameAreItsVictims) {
  TempDir dir("group-end-waits");
  write_ring(dir.path(), [](Round& x) {
    const auto send = trace::OpKind::kSend, recv = trace::OpKind::kRecv;
    if (completed_before_the_hang(x) || x.k > kStallRound || x.rank == 1) return;
    if (x.next == 1 || x.prev == 1) {
      x.pending.push_back(in_group_end(send, x.next, x.k, x.entered));
      x.pending.push_back(in_group_end(recv, x.prev, x.k, x.entered));
    } else {
      // Rank 3's exchange is with 0 and 2 only, who are stuck: it launched, and its GPU
      // started the halves, which wait for theirs.
      x.pending.push_back(outstanding(send, x.next, x.k, x.entered, x.at));
      x.pending.push_back(outstanding(recv, x.prev, x.k, x.entered, x.at));
    }
  });
  expect_one_root(analyze_quietly(dir.path()), "missing_rank", {1});
}

}  // namespace
}  // namespace ringside::analysis::test
