// A window over the end of a job (load/op_window.h): cut where every member of
// an op has it, also for communicators and send/recv channels that some members'
// last rows do not hold; and an analysis of the window names what the whole job's
// analysis names.
#include <gtest/gtest.h>

#include "load/trace_set.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

constexpr uint64_t kCommA = 0xa1, kCommB = 0xb2, kCommP = 0xc3;

trace::OpRecord op(trace::OpKind kind, uint64_t comm, uint64_t seq, int64_t start) {
  trace::OpRecord r = hand_op(kind, comm, seq, start, start + kMs / 2);
  r.count = 1 << 18;
  r.bytes = 1 << 20;
  return r;
}

trace::OpRecord p2p(trace::OpKind kind, int peer, uint32_t peer_seq, int64_t start) {
  trace::OpRecord r = op(kind, kCommP, 0, start);
  r.peer = peer;
  r.peer_seq = peer_seq;
  return r;
}

void write_rank(const std::string& dir, int rank, const std::vector<trace::OpRecord>& ops) {
  std::vector<trace::CommRecord> comms;
  for (uint64_t id : {kCommA, kCommB, kCommP}) comms.push_back(hand_comm(id, 2, rank));
  write_hand_trace(dir, "window", rank, 2, 1, comms, ops, ops.back().t_dev_end_ns + kMs);
}

// Rank 0 makes its four all-reduces on A and its five sends to rank 1 first, then
// 100 on B; rank 1 makes 90 on B, then the four on A and the five receives, then
// the last ten on B.  The last 20 rows of rank 0 hold none of A or of the channel:
// its earlier rows say it made them all, so none of them is in the window.
void write_job(const std::string& dir) {
  std::vector<trace::OpRecord> r0, r1;
  int64_t t0 = 100 * kMs, t1 = 100 * kMs;
  for (uint64_t s = 0; s < 4; ++s)
    r0.push_back(op(trace::OpKind::kAllReduce, kCommA, s, t0 += kMs));
  for (uint32_t s = 0; s < 5; ++s) r0.push_back(p2p(trace::OpKind::kSend, 1, s, t0 += kMs));
  for (uint64_t s = 0; s < 100; ++s) {
    const int64_t t = 200 * kMs + static_cast<int64_t>(s) * 2 * kMs;
    r0.push_back(op(trace::OpKind::kAllReduce, kCommB, s, t));
    if (s == 90) {
      for (uint64_t a = 0; a < 4; ++a)
        r1.push_back(op(trace::OpKind::kAllReduce, kCommA, a, t1 += kMs));
      for (uint32_t q = 0; q < 5; ++q) r1.push_back(p2p(trace::OpKind::kRecv, 0, q, t1 += kMs));
    }
    r1.push_back(op(trace::OpKind::kAllReduce, kCommB, s, t));
    t1 = t + kMs;
  }
  write_rank(dir, 0, r0);
  write_rank(dir, 1, r1);
}

TEST(OpWindow, CutWhereEveryMemberHasTheOp) {
  TempDir dir("window-cut");
  write_job(dir.path());
  OpWindowCache cache;
  for (int poll = 0; poll < 2; ++poll) {
    LoadOptions options;
    options.window_ops = 20;
    options.window_cache = &cache;
    Progress quiet(false);
    auto set = load_trace_set(dir.path(), options, quiet);
    ASSERT_TRUE(set.ok()) << set.message();
    const TraceSet& s = set.value();
    EXPECT_EQ(s.ranks[0].first_row, 109u - 20u);
    EXPECT_EQ(s.ranks[1].first_row, 109u - 20u);
    // Rank 0's window starts at B 80 and rank 1's at B 89 (then A, the receives, B 90...).
    EXPECT_EQ(s.window.first_seq_of(kCommB), 89u);
    // Rank 1's window starts A at 0, but rank 0 made A 0-3 before its window.
    EXPECT_EQ(s.window.first_seq_of(kCommA), 4u);
    const auto ch = s.window.first_peer_seq.find(P2PChannelId{kCommP, 0, 1});
    ASSERT_NE(ch, s.window.first_peer_seq.end());
    EXPECT_EQ(ch->second, 5u);
    // Only rank 0's rows before its window were scanned, once.
    ASSERT_EQ(cache.files.size(), 1u);
    EXPECT_EQ(cache.files.begin()->second.rows, 89u);
  }
}

TEST(OpWindow, WindowOfAJobWithOpsBeforeItIsHealthy) {
  TempDir dir("window-healthy");
  write_job(dir.path());
  AnalyzeOptions options;
  options.progress = false;
  options.window_ops = 20;
  auto report = analyze_directory(dir.path(), options);
  ASSERT_TRUE(report.ok()) << report.message();
  for (const auto& f : report.value().findings)
    ADD_FAILURE() << f.kind << "/" << f.subkind << ": " << f.evidence;
  ASSERT_TRUE(report.value().extra.contains("window"));
  EXPECT_EQ(report.value().extra["window"].value("ops_per_rank", 0), 20);
}

// Hybrid TP x PP x DP jobs, faults late in the job: the window's analysis names
// the same root, and nothing else, as the whole job's.
class WindowedFaults : public ::testing::TestWithParam<const char*> {};

TEST_P(WindowedFaults, SameFindingsAsTheWholeJob) {
  TempDir dir("window-fault");
  auto spec = small_spec(dir.path(), 3);
  spec.ranks = 16;
  spec.nodes = 4;
  spec.tp = 2;
  spec.pp = 2;
  spec.steps = 60;
  spec.unique_ids = true;
  const std::string fault = GetParam();
  const Report whole = synth_and_analyze(
      spec, fault.empty() ? std::vector<std::string>{} : std::vector<std::string>{fault});
  AnalyzeOptions options;
  options.progress = false;
  options.window_ops = 120;
  auto windowed = analyze_directory(spec.out_dir, options);
  ASSERT_TRUE(windowed.ok()) << windowed.message();
  const Report& w = windowed.value();
  ASSERT_TRUE(w.extra.contains("window"));
  EXPECT_GT(w.extra["window"].value("start_s", 0.0), 0.5) << "the window cut nothing";
  EXPECT_EQ(w.verdict, whole.verdict);
  ASSERT_EQ(w.findings.size(), whole.findings.size());
  for (size_t i = 0; i < w.findings.size(); ++i) {
    EXPECT_EQ(w.findings[i].kind, whole.findings[i].kind);
    EXPECT_EQ(w.findings[i].subkind, whole.findings[i].subkind);
    EXPECT_EQ(w.findings[i].ranks, whole.findings[i].ranks);
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, WindowedFaults,
                         ::testing::Values("", "stop:rank=5,op=45", "crash:rank=9,op=45",
                                           "stall:rank=14,op=45", "straggler:rank=6,factor=1.3"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string name =
                               std::string(p.param).substr(0, std::string(p.param).find(':'));
                           return name.empty() ? std::string("healthy") : name;
                         });

}  // namespace
}  // namespace ringside::analysis::test
