// What `ringside watch` announces, poll by poll: a finding must hold on a second
// read of newer data, unless the job is over and the files are whole.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "analyze.h"
#include "load/link_windows.h"
#include "load/rank_tables.h"
#include "load/window_rows.h"
#include "report/report_json.h"
#include "ringside/trace_reader_cache.h"
#include "ringside/trace_validate.h"
#include "ringside/trace_writer.h"
#include "synth/synth_writer.h"
#include "test_util.h"
#include "watch/finding_debounce.h"
#include "watch/unchanged_traces.h"
#include "watch/watch.h"

namespace ringside::analysis::watch {
namespace {

Finding finding(const std::string& subkind, std::vector<int64_t> ranks, double cost = 1) {
  Finding f;
  f.kind = "hang";
  f.subkind = subkind;
  f.ranks = std::move(ranks);
  f.cost_s = cost;
  return f;
}

// A one-rank trace file `job` rank 0 in `dir`, open for appending as a live probe's.
std::unique_ptr<trace::TraceWriter> live_writer(const std::string& dir, const std::string& job,
                                                std::string& path) {
  path = dir + "/" + trace::trace_file_name(job, 0);
  trace::TraceMeta meta;
  meta.producer = "synth";
  meta.job_id = job;
  meta.rank = 0;
  meta.world_size = 1;
  trace::stamp_clock_reference(meta);
  auto w = trace::TraceWriter::create(path, meta);
  EXPECT_TRUE(w.ok()) << w.message();
  return w.ok() ? std::move(w.value()) : nullptr;
}

// An all-reduce row of sequence number `seq`, timed on the host only.
trace::OpRecord host_timed_op(uint64_t seq) {
  trace::OpRecord op{};
  op.seq = seq;
  op.t_enter_ns = static_cast<int64_t>(seq) * 1000;
  op.t_exit_ns = op.t_enter_ns + 10;
  op.t_dev_start_ns = op.t_dev_end_ns = trace::kUnknownTime;
  op.peer = -1;
  op.op = static_cast<uint8_t>(trace::OpKind::kAllReduce);
  return op;
}

// Appends and flushes rows of seq [from, from + n) (host_timed_op); the row of seq `bad`
// gets a status no producer writes.
void append_host_timed(trace::TraceWriter& w, uint64_t from, uint64_t n,
                       uint64_t bad = UINT64_MAX) {
  std::vector<trace::OpRecord> ops(n);
  for (uint64_t i = 0; i < n; ++i) {
    ops[i] = host_timed_op(from + i);
    if (from + i == bad) ops[i].status = 200;
  }
  ASSERT_TRUE(w.append(std::span<const trace::OpRecord>(ops)).ok());
  ASSERT_TRUE(w.flush({}, {}).ok());
}

TEST(FindingDebounce, AFindingIsAnnouncedOnceTwoPollsInARowShowIt) {
  FindingDebounce d;
  EXPECT_TRUE(d.update({finding("missing_rank", {3})}, false).added.empty());
  const auto second = d.update({finding("missing_rank", {3}, 2)}, false);
  ASSERT_EQ(second.added.size(), 1u);
  EXPECT_EQ(second.added[0].subkind, "missing_rank");
  EXPECT_EQ(second.added[0].cost_s, 2);  // the latest figures
  // Once announced, never again while it holds, whatever its figures.
  EXPECT_TRUE(d.update({finding("missing_rank", {3}, 5)}, false).added.empty());
}

TEST(FindingDebounce, OnePollsMisreadNeverPagesAnyone) {
  FindingDebounce d;
  // A file read mid-flush makes rank 1 look dead for one poll only.
  d.update({finding("dead_rank", {1})}, false);
  const auto next = d.update({finding("missing_rank", {3})}, false);
  EXPECT_TRUE(next.added.empty());
  EXPECT_TRUE(next.cleared.empty());
  const auto third = d.update({finding("missing_rank", {3})}, false);
  ASSERT_EQ(third.added.size(), 1u);
  EXPECT_EQ(third.added[0].ranks, std::vector<int64_t>{3});
}

TEST(FindingDebounce, AFindingIsClearedOnceTwoPollsInARowLackIt) {
  FindingDebounce d;
  d.update({finding("missing_rank", {3})}, false);
  d.update({finding("missing_rank", {3})}, false);
  EXPECT_TRUE(d.update({}, false).cleared.empty());
  // Back after one poll without it: still open, not announced again.
  const auto back = d.update({finding("missing_rank", {3})}, false);
  EXPECT_TRUE(back.added.empty() && back.cleared.empty());
  d.update({}, false);
  const auto gone = d.update({}, false);
  ASSERT_EQ(gone.cleared.size(), 1u);
  EXPECT_EQ(gone.cleared[0].subkind, "missing_rank");
}

TEST(FindingDebounce, WhenTheJobIsOverEveryFindingIsAnnouncedAtOnce) {
  FindingDebounce d;
  const auto c = d.update({finding("dead_rank", {5}), finding("dead_rank", {5})}, true);
  ASSERT_EQ(c.added.size(), 1u);  // the same blame twice is one finding
  EXPECT_EQ(c.added[0].ranks, std::vector<int64_t>{5});
}

TEST(JobEnd, ARankThatIsExitingIsNotTakenForDeadOnOnePoll) {
  JobEnd end;
  // 8 ranks: 7 closed, rank 3 exiting (no shutdown record yet: found dead).
  EXPECT_FALSE(end.update(8, 8, 7, 1));
  EXPECT_TRUE(end.update(8, 8, 8, 0));  // closed now: over at once
}

TEST(JobEnd, ADeadRankEndsTheJobOnTheSecondPoll) {
  JobEnd end;
  EXPECT_FALSE(end.update(8, 8, 0, 0));
  EXPECT_FALSE(end.update(8, 8, 7, 1));
  EXPECT_TRUE(end.update(8, 8, 7, 1));
}

TEST(JobEnd, RanksWithoutAFileYetKeepItRunning) {
  JobEnd end;
  EXPECT_FALSE(end.update(8, 4, 4, 0));
  EXPECT_FALSE(end.update(8, 4, 4, 0));
  EXPECT_TRUE(end.update(8, 8, 8, 0));
}

TEST(FindingDebounce, FindingsAreKnownByWhatTheyBlame) {
  FindingDebounce d;
  d.update({finding("missing_rank", {3})}, false);
  // Another rank is another finding: not confirmed by the first.
  EXPECT_TRUE(d.update({finding("missing_rank", {4})}, false).added.empty());
}

// A running 8-rank synthetic job (files without an end record) with `faults`; with
// `overlap`, tensor x data parallel, its gradient buckets all-reduced alongside the
// backward pass (and its tensor-parallel ops).
bool write_live_job(const std::string& dir, const std::vector<std::string>& faults,
                    bool overlap = false) {
  synth::SynthSpec spec;
  spec.out_dir = dir;
  spec.ranks = 8;
  spec.nodes = 2;
  spec.steps = 60;
  spec.live = true;
  spec.links = true;  // /links rows, as the probe's profiler plugin writes them
  spec.overlap = overlap;
  if (overlap) spec.tp = 2;
  for (const std::string& f : faults) spec.faults.push_back(*synth::parse_fault(f));
  return synth::write_synth_traces(spec).ok();
}

// What one watch poll asks of the analysis, before any cache is given.
AnalyzeOptions live_poll_options() {
  AnalyzeOptions o;
  o.progress = false;
  o.window_ops = 64;
  o.thresholds.live = true;
  return o;
}

// A poll with the files kept open between polls (as `ringside watch` keeps
// them) reports exactly what a poll that opens every file afresh reports, and
// opens each file once over the polls.
TEST(WatchPoll, FilesKeptOpenGiveTheReportOfFreshlyOpenedFiles) {
  test::TempDir dir("watch-kept-open");
  ASSERT_TRUE(write_live_job(dir.path(), {"straggler:rank=5,factor=1.3"}));
  AnalyzeOptions fresh = live_poll_options();
  auto expected = analyze_directory(dir.path(), fresh);
  ASSERT_TRUE(expected.ok()) << expected.message();
  const nlohmann::json want = report_to_json(expected.value());
  EXPECT_FALSE(expected->findings.empty()) << "the straggler is found";

  OpWindowCache rows_before;
  trace::TraceDirCache headers;
  trace::TraceReaderCache open_files(64);
  AnalyzeOptions polls = fresh;
  polls.window_cache = &rows_before;
  polls.dir_cache = &headers;
  polls.reader_cache = &open_files;
  for (int poll = 0; poll < 3; ++poll) {
    auto got = analyze_directory(dir.path(), polls);
    ASSERT_TRUE(got.ok()) << got.message();
    EXPECT_EQ(report_to_json(got.value()), want) << "poll " << poll;
  }
  EXPECT_EQ(open_files.kept(), 8u);
  EXPECT_EQ(open_files.files_opened(), 8u) << "each file opened once over three polls";
  // A file removed from the directory is not held open by the watch.
  std::filesystem::remove(dir.path() + "/" + trace::trace_file_name("synth", 7));
  ASSERT_TRUE(analyze_directory(dir.path(), polls).ok());
  EXPECT_EQ(open_files.kept(), 7u);
}

// Polls that hold each rank's window rows and small tables between them (as
// `ringside watch` does), and so each rank's own compute from one pass to the next,
// report exactly what an analysis that reads every file afresh reports, and read no
// row twice: for a job whose ops hold its ranks up, and for one whose gradient buckets
// run alongside the compute (its compute is measured again once that is known).
class HeldRows : public testing::TestWithParam<bool> {};

TEST_P(HeldRows, GiveTheReportOfFreshReads) {
  test::TempDir dir("watch-held-rows");
  ASSERT_TRUE(
      write_live_job(dir.path(), {"straggler:rank=5,factor=1.3", "throttle:rank=2"}, GetParam()));
  AnalyzeOptions fresh = live_poll_options();
  fresh.views = false;  // never drawn live
  auto expected = analyze_directory(dir.path(), fresh);
  ASSERT_TRUE(expected.ok()) << expected.message();
  nlohmann::json want = report_to_json(expected.value());
  EXPECT_FALSE(expected->findings.empty()) << "the straggler is found";
  bool alongside = false;
  for (const auto& rank : want.at("late_ranks")) {
    for (const auto& comm : rank.at("per_comm"))
      alongside = alongside || comm.at("ran_alongside").get<uint64_t>() > 0;
  }
  EXPECT_EQ(alongside, GetParam()) << "ops seen running alongside the compute in the overlap job";

  WindowRowCache rows;
  RankTablesCache tables;
  AnalyzeOptions polls = fresh;
  polls.row_cache = &rows;
  polls.tables_cache = &tables;
  for (int poll = 0; poll < 3; ++poll) {
    auto got = analyze_directory(dir.path(), polls);
    ASSERT_TRUE(got.ok()) << got.message();
    nlohmann::json have = report_to_json(got.value());
    for (nlohmann::json* j : {&want, &have}) j->erase("analysis_seconds");
    EXPECT_EQ(have, want) << "poll " << poll;
  }
  EXPECT_EQ(rows.files(), 8u);
  EXPECT_EQ(rows.rows_read(), rows.rows_held()) << "no row read twice over three polls";
}

INSTANTIATE_TEST_SUITE_P(WatchPoll, HeldRows, testing::Bool(),
                         [](const auto& p) { return p.param ? "Overlap" : "NoOverlap"; });

// /links rows appended between two polls are read once and added to the sums kept
// for the file; the sums are those of the whole table read at once.
TEST(WatchPoll, LinkRowsAppendedBetweenTwoPollsAreSummedOnce) {
  test::TempDir dir("watch-link-sums");
  std::string path;
  auto w = live_writer(dir.path(), "links", path);
  ASSERT_NE(w, nullptr);
  std::vector<trace::LinkRecord> all;
  auto append = [&](int windows) {
    std::vector<trace::LinkRecord> rows;
    for (int k = 0; k < windows; ++k) {
      for (uint8_t send = 0; send < 2; ++send) {
        trace::LinkRecord l{};
        l.t_ns = static_cast<int64_t>(all.size() + rows.size() + 1) * 1'000'000'000;
        l.comm_hash = 77;
        l.nranks = 2;
        l.rank = 0;
        l.peer = 1;
        l.n_nodes = 2;
        l.is_send = send;
        l.ops = 3;
        l.steps = 12;
        l.bytes = 3 << 20;
        l.active_ns = 1'000'000 + 1000 * static_cast<int64_t>(all.size() + rows.size());
        l.best_step_bytes = 256 << 10;
        l.best_step_ns = 100'000 + 7919 * static_cast<int64_t>((all.size() + rows.size()) % 13);
        rows.push_back(l);
      }
    }
    ASSERT_TRUE(w->append(std::span<const trace::LinkRecord>(rows)).ok());
    ASSERT_TRUE(w->flush({}, {}).ok());
    all.insert(all.end(), rows.begin(), rows.end());
  };
  trace::TraceReaderCache readers(4);
  RankTablesCache tables;
  auto poll = [&]() -> std::vector<trace::LinkRecord> {
    auto r = readers.open(path);
    EXPECT_TRUE(r.ok()) << r.message();
    auto sums = tables.update_links(*r.value(), 1);
    EXPECT_TRUE(sums.ok()) << sums.message();
    return sums.ok() ? *sums.value() : std::vector<trace::LinkRecord>{};
  };
  auto same = [](const std::vector<trace::LinkRecord>& a, const std::vector<trace::LinkRecord>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].t_ns, b[i].t_ns);
      EXPECT_EQ(a[i].ops, b[i].ops);
      EXPECT_EQ(a[i].bytes, b[i].bytes);
      EXPECT_EQ(a[i].active_ns, b[i].active_ns);
      EXPECT_EQ(a[i].best_step_ns, b[i].best_step_ns);
    }
  };
  append(5);
  same(poll(), sum_link_windows(all));
  append(9);
  const auto second = poll();
  same(second, sum_link_windows(all));
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].ops, 14u * 3u) << "each window's row counted once";
  same(poll(), second);  // nothing new
  // A row out of range is named, and nothing is kept for the file.
  trace::LinkRecord bad = all.back();
  bad.peer = 5;
  ASSERT_TRUE(w->append(std::span<const trace::LinkRecord>(&bad, 1)).ok());
  ASSERT_TRUE(w->flush({}, {}).ok());
  auto r = readers.open(path);
  ASSERT_TRUE(r.ok());
  auto failed = tables.update_links(*r.value(), 1);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("peer"), std::string::npos) << failed.message();
}

// A live writer's rows: each appended row is read once, rows that leave the window
// are dropped (at once or a few at a time), and a file replaced under the same name is
// read anew.
TEST(WatchPoll, RowsAppendedBetweenTwoPollsAreReadOnce) {
  test::TempDir dir("watch-row-cache");
  std::string path;
  auto w = live_writer(dir.path(), "rows", path);
  ASSERT_NE(w, nullptr);
  auto append = [&](uint64_t from, uint64_t n) { append_host_timed(*w, from, n); };
  auto seqs = [](std::span<const trace::OpRecord> rows) {
    std::vector<uint64_t> out;
    for (const auto& op : rows) out.push_back(op.seq);
    return out;
  };
  auto range = [](uint64_t from, uint64_t to) {
    std::vector<uint64_t> out;
    for (uint64_t i = from; i < to; ++i) out.push_back(i);
    return out;
  };
  WindowRowCache cache;
  append(0, 100);
  {
    auto r = trace::TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(cache.update(path, *r.value(), window_first_row(100, 64), 100).ok());
  }
  EXPECT_EQ(seqs(cache.rows(path)), range(36, 100));
  EXPECT_EQ(cache.rows_read(), 64u);
  append(100, 30);
  {
    auto r = trace::TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(cache.update(path, *r.value(), window_first_row(130, 64), 130).ok());
  }
  EXPECT_EQ(seqs(cache.rows(path)), range(66, 130));
  EXPECT_EQ(cache.rows_read(), 94u) << "only the 30 new rows were read";
  // A few rows per poll: rows that left stay in front of the held ones for a while.
  for (uint64_t end = 133; end <= 190; end += 3) {
    append(end - 3, 3);
    auto r = trace::TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(cache.update(path, *r.value(), window_first_row(end, 64), end).ok());
    EXPECT_EQ(seqs(cache.rows(path)), range(end - 64, end)) << "after row " << end;
    EXPECT_EQ(cache.rows_held(), 64u);
    EXPECT_EQ(cache.valid_rows(path), 64u);
  }
  EXPECT_EQ(cache.rows_read(), 154u) << "each row read once";
  ASSERT_TRUE(w->close().ok());

  // The same name, another file (which may well get the removed one's inode): read anew.
  std::filesystem::remove(path);
  w = live_writer(dir.path(), "rows", path);
  ASSERT_NE(w, nullptr);
  append(500, 140);
  {
    auto r = trace::TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(cache.update(path, *r.value(), window_first_row(140, 64), 140).ok());
  }
  EXPECT_EQ(seqs(cache.rows(path)), range(576, 640));
  ASSERT_TRUE(w->close().ok());
}

// Each held row is checked (trace::validate_op) once, when read: the cache tells how many
// rows from the first are valid, up to the first that is not, and checks the rows after
// that one once it has left the window.
TEST(WatchPoll, HeldRowsAreCheckedOnceUpToTheFirstInvalidOne) {
  test::TempDir dir("watch-row-checks");
  std::string path;
  auto w = live_writer(dir.path(), "checks", path);
  ASSERT_NE(w, nullptr);
  auto append = [&](uint64_t from, uint64_t n, uint64_t bad) {
    append_host_timed(*w, from, n, bad);
  };
  WindowRowCache cache;
  auto poll = [&](uint64_t count) {
    auto r = trace::TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(cache.update(path, *r.value(), window_first_row(count, 64), count).ok());
  };
  append(0, 100, 50);
  poll(100);
  ASSERT_EQ(cache.rows(path).size(), 64u);
  EXPECT_EQ(cache.valid_rows(path), 14u) << "rows 36..49 valid, row 50 not";
  EXPECT_FALSE(trace::validate_op(cache.rows(path)[14]).ok());
  append(100, 10, 105);
  poll(110);
  EXPECT_EQ(cache.valid_rows(path), 4u) << "the window moved by 10 rows; row 50 still in it";
  append(110, 20, 125);
  poll(130);
  EXPECT_EQ(cache.valid_rows(path), 105u - 66u)
      << "row 50 left the window: the rows after it are checked, up to row 105";
  append(130, 70, 1000);
  poll(200);
  EXPECT_EQ(cache.valid_rows(path), 64u) << "rows 105 and 125 left the window: every row is valid";
  EXPECT_EQ(cache.valid_rows(dir.path() + "/other.h5"), 0u) << "a file not held";
  ASSERT_TRUE(w->close().ok());
}

// A poll reuses the last analysis only while no trace file changed, and only once
// the files' stamps had been seen kSettle before that analysis began (a write in
// the same tick of the file times would not show in them).
TEST(UnchangedTraces, APollReusesTheLastAnalysisOnlyWhileNoTraceChanged) {
  test::TempDir dir("watch-unchanged");
  ASSERT_TRUE(write_live_job(dir.path(), {}));
  using std::chrono::milliseconds;
  const auto t0 = UnchangedTraces::Clock::now();
  auto at = [&](int ms) { return t0 + milliseconds(ms); };
  UnchangedTraces u;
  EXPECT_FALSE(u.check(dir.path(), at(0))) << "nothing analyzed yet";
  u.analyzed();
  EXPECT_FALSE(u.check(dir.path(), at(1000))) << "stamps seen only as the analysis began";
  u.analyzed();
  EXPECT_FALSE(u.check(dir.path(), at(2500))) << "nor a second before it";
  u.analyzed();
  EXPECT_TRUE(u.check(dir.path(), at(3000)));
  EXPECT_TRUE(u.check(dir.path(), at(60000)));
  EXPECT_EQ(u.polls_reused(), 2u);

  // A rank's file written to (its times change): analyzed again.
  const std::string rank3 = dir.path() + "/" + trace::trace_file_name("synth", 3);
  ASSERT_TRUE(std::filesystem::exists(rank3));
  std::filesystem::last_write_time(
      rank3, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  EXPECT_FALSE(u.check(dir.path(), at(61000))) << "the changed rank is picked up";
  u.analyzed();
  EXPECT_FALSE(u.check(dir.path(), at(62000)));
  u.analyzed();
  EXPECT_FALSE(u.check(dir.path(), at(63500)));
  u.analyzed();
  EXPECT_TRUE(u.check(dir.path(), at(64000)));

  // A rank's file appears, then goes.
  const std::string rank8 = dir.path() + "/" + trace::trace_file_name("synth", 8);
  std::filesystem::copy_file(rank3, rank8);
  EXPECT_FALSE(u.check(dir.path(), at(70000))) << "a new trace file";
  u.analyzed();
  std::filesystem::remove(rank8);
  EXPECT_FALSE(u.check(dir.path(), at(80000))) << "a trace file removed";
  EXPECT_EQ(u.polls_reused(), 3u);
}

// `ringside watch` on a job whose files no longer change: once they have settled,
// its polls reuse the last analysis (the status line says so) and report the same.
TEST(WatchPoll, PollsWithNoNewDataReuseTheLastAnalysis) {
  test::TempDir dir("watch-no-new-data");
  ASSERT_TRUE(write_live_job(dir.path(), {"straggler:rank=5,factor=1.3"}));
  WatchOptions o;
  o.dir = dir.path();
  o.poll_s = 0.2;
  o.until_s = 6;  // the files settle 2 s after they are first seen (unchanged_traces.h)
  o.analyze.window_ops = 64;
  std::ostringstream out, err;
  run_watch(o, out, err);
  // Status lines without their time, rate and reuse note: counts, verdict, findings.
  const std::regex noise(R"(^\[[^\]]*\] | \([0-9]+/s\)|, analysis reused \(no trace changed\))");
  int analyzed = 0, reused = 0;
  std::string line, last_analyzed;
  for (std::istringstream in(out.str()); std::getline(in, line);) {
    if (line.find(" op records (") == std::string::npos) continue;
    const std::string status = std::regex_replace(line, noise, "");
    if (line.find("analysis reused (no trace changed)") == std::string::npos) {
      ++analyzed;
      last_analyzed = status;
    } else {
      ++reused;
      EXPECT_EQ(status, last_analyzed) << "a reused analysis reports what it reported";
    }
  }
  EXPECT_GE(analyzed, 1) << out.str();
  EXPECT_GE(reused, 1) << "polls with no new data reuse the analysis\n" << out.str();
  EXPECT_NE(out.str().find("new finding"), std::string::npos) << "the straggler is announced";
}

// The final report reads the files as their writers left them, not as the readers the
// polls kept open last saw them (HDF5 would give a file opened again their state).
TEST(WatchPoll, TheFinalReportSeesWhatWasWrittenAfterTheLastPoll) {
  test::TempDir dir("watch-final-report");
  std::string path;
  auto w = live_writer(dir.path(), "final", path);
  ASSERT_TRUE(w);
  const trace::CommRecord comm = test::hand_comm(77, 1, 0);
  ASSERT_TRUE(w->append(std::span<const trace::CommRecord>(&comm, 1)).ok());
  const std::vector<trace::OpRecord> ops =
      test::hand_ops(trace::OpKind::kAllReduce, 77, 66, 1'000'000, 1'000'000, 100'000);
  // Each flush with the op after its rows outstanding (/pending).
  auto write = [&](size_t from, size_t n) {
    ASSERT_TRUE(w->append(std::span<const trace::OpRecord>(ops).subspan(from, n)).ok());
    trace::OpRecord outstanding = ops[from + n];
    outstanding.status = static_cast<uint8_t>(trace::OpStatus::kHostPending);
    outstanding.t_exit_ns = outstanding.t_dev_start_ns = outstanding.t_dev_end_ns =
        trace::kUnknownTime;
    trace::StatsRecord stats{};
    stats.t_ns = ops[from + n - 1].t_dev_end_ns;
    ASSERT_TRUE(w->flush(std::span<const trace::OpRecord>(&outstanding, 1), stats).ok());
  };
  write(0, 40);
  trace::TraceReaderCache kept(8);
  AnalyzeOptions poll = live_poll_options();
  poll.window_ops = 0;
  poll.reader_cache = &kept;
  auto seen = analyze_directory(dir.path(), poll);
  ASSERT_TRUE(seen.ok()) << seen.message();
  ASSERT_GT(seen->records, 0u);
  ASSERT_EQ(kept.kept(), 1u);
  const uint64_t per_row = seen->records / 40;  // each pass of the analysis counts them
  write(40, 25);
  WatchOptions o;
  o.dir = dir.path();
  auto last = final_report(o, kept);
  ASSERT_TRUE(last.ok()) << last.message();
  EXPECT_TRUE(last->warnings.empty()) << last->warnings.front();
  EXPECT_EQ(last->records, 65 * per_row) << "the rows flushed after the last poll are in it";
  EXPECT_EQ(kept.kept(), 0u);
}

// A command run for a finding gets neither the trace files the watch keeps open (by
// default, every file) nor the open-file limit the watch raised for them.
TEST(WatchPoll, AnOnFindingCommandGetsNoneOfTheWatchsFilesNorItsRaisedLimit) {
  test::TempDir dir("watch-on-finding-fds");
  ASSERT_TRUE(write_live_job(dir.path(), {"straggler:rank=5,factor=1.3"}));
  rlimit started{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &started), 0);
  rlimit lowered = started;
  lowered.rlim_cur = std::min<rlim_t>(started.rlim_max, 200);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const std::string seen = dir.path() + "/command.txt";
  WatchOptions o;
  o.dir = dir.path();
  o.poll_s = 0.2;
  o.until_s = 4;
  o.analyze.window_ops = 64;
  o.on_finding = "{ ulimit -Sn; ls -l /proc/$$/fd; } >> '" + seen + "'";
  std::ostringstream out, err;
  run_watch(o, out, err);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &started), 0);
  std::ifstream in(seen);
  ASSERT_TRUE(in) << "the command ran for the straggler\n" << out.str() << err.str();
  std::string limit;
  std::getline(in, limit);
  EXPECT_EQ(limit, std::to_string(lowered.rlim_cur));
  const std::string fds((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(fds.find(".h5"), std::string::npos) << fds;
}

// What `analyze` warns of, `watch` warns of as it ends: here a file in the directory
// that is not a trace.
TEST(WatchPoll, AFileThatCannotBeReadIsNamedAtTheEnd) {
  test::TempDir dir("watch-bad-file");
  ASSERT_TRUE(write_live_job(dir.path(), {}));
  const std::string bad = dir.path() + "/ringside-stray-r000000.h5";
  { std::ofstream(bad) << "not an HDF5 file"; }
  WatchOptions o;
  o.dir = dir.path();
  o.poll_s = 0.2;
  o.until_s = 1;
  o.analyze.window_ops = 64;
  std::ostringstream out, err;
  run_watch(o, out, err);
  EXPECT_NE(err.str().find("warning: " + bad), std::string::npos) << err.str();
}

}  // namespace
}  // namespace ringside::analysis::watch
