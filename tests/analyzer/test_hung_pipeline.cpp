// A hybrid job (tensor x pipeline x data parallel, 8 ranks) that hangs a few steps in:
// one rank enters an op and its call never returns.  Every other rank then runs on
// until it waits for something that waits for that rank, each at its own point of the
// step: a first-stage rank in a receive before its backward pass, another after its
// whole backward pass in the data-parallel all-reduce.  How far a rank got before it
// was stopped is no work of its own: the report names the hang and nothing else, for
// every stopped rank, step and seed.  Written op by op by a small blocking schedule
// (below), as the ranks of such a job would run it.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr int kRanks = 8, kStageSize = 4;
// tp {0,1} {2,3} {4,5} {6,7}; pp {r, r+4}; dp {0,2} {1,3} {4,6} {5,7}.
uint64_t tp_comm(int r) {
  return 0x7500 + static_cast<uint64_t>(r / 2);
}
uint64_t pp_comm(int r) {
  return 0x7600 + static_cast<uint64_t>(r % kStageSize);
}
uint64_t dp_comm(int r) {
  return 0x7700 + static_cast<uint64_t>(2 * (r / kStageSize) + r % 2);
}
std::vector<int> members(uint64_t comm) {
  std::vector<int> out;
  for (int r = 0; r < kRanks; ++r) {
    if (tp_comm(r) == comm || pp_comm(r) == comm || dp_comm(r) == comm) out.push_back(r);
  }
  return out;
}

// One thing a rank does: compute for `ns`, or call `kind` on `comm`.
struct Step {
  bool compute = false;
  int64_t ns = 0;
  trace::OpKind kind = trace::OpKind::kAllReduce;
  uint64_t comm = 0;
};

// A training step as each stage runs it: the first stage computes its forward pass,
// all-reduces inside its tensor-parallel group and sends the activations on; later it
// receives the gradients, computes its backward pass and all-reduces again.  The
// second stage receives, computes forward and backward (a tensor-parallel all-reduce
// after each) and sends the gradients back.  Each stage ends with its data-parallel
// all-reduce.
std::vector<Step> program(int r, int steps, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> jitter(-0.5, 0.5);
  auto compute = [&](double ms) {
    return Step{.compute = true, .ns = static_cast<int64_t>((ms + jitter(rng)) * kMs)};
  };
  auto call = [&](trace::OpKind kind, uint64_t comm) { return Step{.kind = kind, .comm = comm}; };
  using K = trace::OpKind;
  std::vector<Step> out;
  for (int s = 0; s < steps; ++s) {
    if (r < kStageSize) {
      out.insert(out.end(), {compute(4), call(K::kAllReduce, tp_comm(r)),
                             call(K::kSend, pp_comm(r)), call(K::kRecv, pp_comm(r)), compute(8),
                             call(K::kAllReduce, tp_comm(r)), call(K::kAllReduce, dp_comm(r))});
    } else {
      out.insert(out.end(),
                 {call(K::kRecv, pp_comm(r)), compute(4), call(K::kAllReduce, tp_comm(r)),
                  compute(8), call(K::kAllReduce, tp_comm(r)), call(K::kSend, pp_comm(r)),
                  call(K::kAllReduce, dp_comm(r))});
    }
  }
  return out;
}

// Runs every rank's program: a call ends when every member of its communicator has
// entered it (a collective `takes` after the last arrival, a send/recv half that).  Rank
// `stopped` enters its call number `stop_at` and never returns from it.  The calls still
// outstanding when nothing can move are written as the probe's snapshot at its last
// flush has them, and the job is killed 14 s later.
void write_hung_job(const std::string& dir, uint64_t seed, int stopped, int stop_at,
                    int64_t takes) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<Step>> prog(kRanks);
  for (int r = 0; r < kRanks; ++r) prog[r] = program(r, stop_at / 5 + 2, rng);
  std::vector<size_t> pc(kRanks, 0);
  std::vector<int64_t> t(kRanks, 1000 * kMs);
  std::vector<int> calls(kRanks, 0);
  std::vector<std::vector<trace::OpRecord>> ops(kRanks), pending(kRanks);
  std::map<std::pair<int, uint64_t>, uint64_t> seq;    // (rank, comm) -> calls made on it
  std::map<uint64_t, std::map<int, int64_t>> waiting;  // comm -> rank -> arrival
  // Rank r's next call of `kind` on `comm`, entered at `at`; a send/recv to the other stage.
  auto call = [&](int r, trace::OpKind kind, uint64_t comm, int64_t at, int64_t end) {
    trace::OpRecord op = hand_op(kind, comm, seq[{r, comm}], at, end);
    if (trace::is_p2p(kind)) {
      op.peer = r < kStageSize ? 1 : 0;
      op.peer_seq = static_cast<uint32_t>(op.seq / 2);
    }
    return op;
  };
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < kRanks; ++r) {
      while (pc[r] < prog[r].size() && prog[r][pc[r]].compute) t[r] += prog[r][pc[r]++].ns;
      if (pc[r] == prog[r].size() || waiting[prog[r][pc[r]].comm].count(r)) continue;
      const Step& s = prog[r][pc[r]];
      if (r == stopped && calls[r] == stop_at) {
        trace::OpRecord op = call(r, s.kind, s.comm, t[r], trace::kUnknownTime);
        op.t_exit_ns = op.t_dev_start_ns = trace::kUnknownTime;
        op.status = static_cast<uint8_t>(trace::OpStatus::kHostPending);
        pending[r].push_back(op);
        pc[r] = prog[r].size();
        continue;
      }
      ++calls[r];
      waiting[s.comm][r] = t[r];
      moved = true;
      const std::vector<int> m = members(s.comm);
      if (waiting[s.comm].size() < m.size()) continue;
      int64_t last = 0;
      for (const auto& [q, at] : waiting[s.comm]) last = std::max(last, at);
      const bool p2p = trace::is_p2p(s.kind);
      const int64_t end = last + (p2p ? takes / 2 : takes);
      for (const auto& [q, at] : waiting[s.comm]) {
        ops[q].push_back(call(q, prog[q][pc[q]].kind, s.comm, at, end));
        ++seq[{q, s.comm}];
        t[q] = end;
        ++pc[q];
      }
      waiting[s.comm].clear();
    }
  }
  int64_t job_end = 0;
  for (int r = 0; r < kRanks; ++r) job_end = std::max(job_end, t[r]);
  for (auto& [comm, w] : waiting) {
    for (const auto& [r, at] : w) {
      trace::OpRecord op = call(r, prog[r][pc[r]].kind, comm, at, trace::kUnknownTime);
      op.status = static_cast<uint8_t>(trace::OpStatus::kDevicePending);
      pending[r].push_back(op);
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    const std::vector<trace::CommRecord> comms = {hand_comm(tp_comm(r), 2, r % 2),
                                                  hand_comm(pp_comm(r), 2, r / kStageSize),
                                                  hand_comm(dp_comm(r), 2, (r % kStageSize) / 2)};
    write_hand_trace(dir, "hung", r, kRanks, kStageSize, comms, ops[r], job_end + 14'000 * kMs, 0,
                     false, pending[r]);
  }
}

TEST(HungPipeline, NamesTheHangAndNoWorkWhereRanksStoppedAtDifferentPoints) {
  int runs = 0;
  for (int stopped = 0; stopped < kRanks; ++stopped) {
    for (int stop_at : {5, 9, 16, 20}) {
      for (int64_t takes : {kMs, 10 * kMs}) {
        const uint64_t seed = static_cast<uint64_t>(stopped * 100 + stop_at);
        TempDir dir("hung_pipeline");
        write_hung_job(dir.path(), seed, stopped, stop_at, takes);
        const std::string what = "rank " + std::to_string(stopped) + " stopped at call " +
                                 std::to_string(stop_at) + ", ops of " +
                                 std::to_string(takes / kMs) + " ms, seed " + std::to_string(seed);
        const Report report = analyze_quietly(dir.path());
        ++runs;
        EXPECT_EQ(report.verdict, "hung") << what;
        ASSERT_FALSE(report.findings.empty()) << what;
        EXPECT_EQ(report.findings.front().kind, "hang") << what;
        EXPECT_EQ(report.findings.front().ranks, std::vector<int64_t>{stopped}) << what;
        for (size_t i = 1; i < report.findings.size(); ++i) {
          const Finding& f = report.findings[i];
          ADD_FAILURE() << what << ": " << f.kind << "/" << f.subkind << ": " << f.evidence;
        }
      }
    }
  }
  EXPECT_EQ(runs, kRanks * 4 * 2);
}

}  // namespace
}  // namespace ringside::analysis::test
