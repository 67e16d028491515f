// A reader kept open on a live file (TraceReader::sync): between two syncs it reads
// one view of the file; a sync brings in every table a new /stats row announces, and
// rows a writer appended after its last flush are announced when it closes the file.
// Rows no complete flush announced (a kill in the middle of one) are not read.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;
using testing::make_temp_dir;

struct LiveFile {
  std::string dir, path;
  std::unique_ptr<TraceWriter> writer;
  uint64_t next_seq = 0;

  explicit LiveFile(const std::string& tag) : dir(make_temp_dir(tag)) {
    path = dir + "/" + trace_file_name("sync", 0);
    auto w = TraceWriter::create(path, testing::sample_meta("sync", 0, 2));
    EXPECT_TRUE(w.ok()) << w.message();
    if (w.ok()) writer = std::move(w.value());
  }
  ~LiveFile() {
    writer.reset();
    fs::remove_all(dir);
  }
  // `ops` ops, and one row of each small table.
  void append(uint64_t ops) {
    append_ops(ops);
    const SampleRecord s = testing::make_sample(next_seq);
    const EventRecord e = testing::make_event(next_seq);
    const CommRecord c = testing::make_comm(next_seq);
    ASSERT_TRUE(writer->append(std::span(&s, 1)).ok());
    ASSERT_TRUE(writer->append(std::span(&e, 1)).ok());
    ASSERT_TRUE(writer->append(std::span(&c, 1)).ok());
  }
  void append_ops(uint64_t n) {
    std::vector<OpRecord> rows;
    for (uint64_t i = 0; i < n; ++i) rows.push_back(testing::make_op(next_seq++));
    ASSERT_TRUE(writer->append(std::span<const OpRecord>(rows)).ok());
  }
  void flush() {
    StatsRecord st{};
    st.ops_recorded = next_seq;
    ASSERT_TRUE(writer->flush({}, st).ok());
  }
  // A reader of the file as it stands, synced (as the reader cache keeps one).
  std::unique_ptr<TraceReader> synced_reader() const {
    auto r = TraceReader::open(path);
    EXPECT_TRUE(r.ok()) << r.message();
    if (!r.ok()) return nullptr;
    r.value()->sync();
    return std::move(r.value());
  }
};

struct Seen {
  uint64_t ops = 0;
  size_t samples = 0, events = 0, comms = 0, stats = 0;
  bool operator==(const Seen&) const = default;
};

Seen seen(const TraceReader& r) {
  Seen s;
  s.ops = r.op_count();
  s.samples = r.samples().value().size();
  s.events = r.events().value().size();
  s.comms = r.comms().value().size();
  s.stats = r.stats().value().size();
  return s;
}

TEST(TraceSync, ASyncedReaderReadsOneViewUntilItSyncsAgain) {
  LiveFile f("sync-view");
  ASSERT_TRUE(f.writer);
  f.append(30);
  f.flush();
  auto r = f.synced_reader();
  ASSERT_TRUE(r);
  const Seen first = seen(*r);
  EXPECT_EQ(first, (Seen{30, 1, 1, 1, 1}));

  f.append(25);
  f.flush();
  EXPECT_EQ(seen(*r), first) << "nothing is refreshed between two syncs";
  r->sync();
  EXPECT_EQ(seen(*r), (Seen{55, 2, 2, 2, 2})) << "every table the flush announced";
  std::vector<OpRecord> rows(25);
  auto got = r->read_ops(30, rows);
  ASSERT_TRUE(got.ok()) << got.message();
  ASSERT_EQ(got.value(), 25u);
  for (uint64_t i = 0; i < 25; ++i) EXPECT_EQ(rows[i].seq, 30 + i);

  r->sync();  // no flush since
  EXPECT_EQ(seen(*r), (Seen{55, 2, 2, 2, 2}));
}

// A synced reader finds the newest flush by reading the last /stats rows; stats(first)
// then gives the rows from `first` on as a fresh reader of the same flush does, however
// many flushes came between two syncs and wherever `first` lies.
TEST(TraceSync, StatsFromAnyRowAreThoseAFreshReaderReads) {
  LiveFile f("sync-stats");
  ASSERT_TRUE(f.writer);
  f.append(4);
  f.flush();
  auto r = f.synced_reader();
  ASSERT_TRUE(r);
  for (int flushes : {1, 3, 12, 1, 0, 2}) {
    for (int i = 0; i < flushes; ++i) {
      f.append(3);
      f.flush();
    }
    r->sync();
    auto fresh = TraceReader::open(f.path);
    ASSERT_TRUE(fresh.ok()) << fresh.message();
    const std::vector<StatsRecord> all = fresh.value()->stats().value();
    for (uint64_t first = 0; first <= all.size() + 2; ++first) {
      auto got = r->stats(first);
      ASSERT_TRUE(got.ok()) << got.message();
      const size_t want = first < all.size() ? all.size() - first : 0;
      ASSERT_EQ(got.value().size(), want) << "from row " << first;
      for (size_t k = 0; k < want; ++k) {
        EXPECT_EQ(got.value()[k].flush_index, all[first + k].flush_index);
        EXPECT_EQ(got.value()[k].ops_rows, all[first + k].ops_rows);
      }
    }
  }
}

TEST(TraceSync, AFlushThatAddsOnlyOpsAnnouncesTheOtherTablesUnchanged) {
  LiveFile f("sync-ops-only");
  ASSERT_TRUE(f.writer);
  f.append(10);
  f.flush();
  auto r = f.synced_reader();
  ASSERT_TRUE(r);
  f.append_ops(40);
  f.flush();
  r->sync();
  EXPECT_EQ(seen(*r), (Seen{50, 1, 1, 1, 2}));
  const StatsRecord last = r->stats().value().back();
  EXPECT_EQ(last.ops_rows, 50u);
  EXPECT_EQ(last.samples_rows, 1u);
  EXPECT_EQ(last.events_rows, 1u);
  EXPECT_EQ(last.comms_rows, 1u);
  EXPECT_EQ(last.links_rows, 0u);
  EXPECT_GE(last.progress_rows, 1u);
}

TEST(TraceSync, RowsAppendedAfterTheLastFlushAreAnnouncedWhenTheFileCloses) {
  LiveFile f("sync-close");
  ASSERT_TRUE(f.writer);
  f.append(20);
  OpRecord stuck = testing::make_op(f.next_seq);
  stuck.status = static_cast<uint8_t>(OpStatus::kDevicePending);
  StatsRecord st{};
  st.ops_recorded = 21;
  ASSERT_TRUE(f.writer->flush(std::span(&stuck, 1), st).ok());
  auto r = f.synced_reader();
  ASSERT_TRUE(r);
  // As nccl_bench ends a trace after a failure: an event and ops, then close.
  f.append(5);
  ASSERT_TRUE(f.writer->close().ok());
  r->sync();
  EXPECT_EQ(seen(*r), (Seen{25, 2, 2, 2, 2}));
  const auto stats = r->stats().value();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].flush_index, stats[0].flush_index) << "the closing row repeats the flush";
  EXPECT_EQ(stats[1].pending_ops, 1u);
  EXPECT_EQ(stats[1].ops_rows, 25u);
  auto pending = r->last_pending();
  ASSERT_TRUE(pending.ok()) << pending.message();
  ASSERT_EQ(pending.value().size(), 1u);
  EXPECT_EQ(pending.value()[0].seq, 20u);
}

TEST(TraceSync, AFileNeverFlushedGetsItsFirstFlushWhenItCloses) {
  LiveFile f("sync-no-flush");
  ASSERT_TRUE(f.writer);
  auto r = f.synced_reader();
  ASSERT_TRUE(r);
  f.append(7);
  ASSERT_TRUE(f.writer->close().ok());
  r->sync();
  EXPECT_EQ(seen(*r), (Seen{7, 1, 1, 1, 1}));
  EXPECT_EQ(r->stats().value()[0].flush_index, 1u);
  EXPECT_EQ(r->stats().value()[0].pending_ops, 0u);
}

TEST(TraceSync, AFileClosedRightAfterItsFlushGetsNoExtraRow) {
  LiveFile f("sync-clean-close");
  ASSERT_TRUE(f.writer);
  f.append(5);
  f.flush();
  ASSERT_TRUE(f.writer->close().ok());
  auto r = TraceReader::open(f.path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->stats().value().size(), 1u);
}

// Gives a closed file's dataset `name` `rows` rows, as a kill in the middle of a flush
// leaves it: the tables written before /stats are visible, /stats is not.
void set_rows(const std::string& path, const char* name, hsize_t rows) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  EXPECT_GE(ds, 0);
  EXPECT_GE(H5Dset_extent(ds, &rows), 0);
  H5Dclose(ds);
  H5Fclose(file);
}

// The second flush's /ops and /comms rows are visible, its /stats row is not: the
// reader stays at the first flush, whose ops are all on communicators it lists.
TEST(TraceSync, AFlushCutShortIsNotRead) {
  LiveFile f("sync-cut");
  ASSERT_TRUE(f.writer);
  f.append(30);
  f.flush();
  f.append(25);  // with a second communicator
  f.flush();
  ASSERT_TRUE(f.writer->close().ok());
  set_rows(f.path, kStatsDataset, 1);
  auto r = TraceReader::open(f.path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(seen(*r.value()), (Seen{30, 1, 1, 1, 1}));
  auto raw = TraceReader::open_ops(f.path);
  ASSERT_TRUE(raw.ok()) << raw.message();
  EXPECT_EQ(raw.value()->op_count(), 55u) << "the rows are in the file";
}

// A kill during the first flush (a launcher tearing down a job that ran shorter than the
// flush interval): op rows reached the file, nothing announced them.
TEST(TraceSync, AFileWhoseFirstFlushWasCutShortReadsAsAHeaderWithoutRows) {
  LiveFile f("sync-cut-first");
  ASSERT_TRUE(f.writer);
  f.append(30);
  f.flush();
  ASSERT_TRUE(f.writer->close().ok());
  set_rows(f.path, kCommsDataset, 0);
  set_rows(f.path, kStatsDataset, 0);
  auto r = TraceReader::open(f.path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->meta().job_id, "sync");
  EXPECT_EQ(seen(*r.value()), (Seen{0, 0, 0, 0, 0}));
  EXPECT_TRUE(r.value()->last_pending().value().empty());
  EXPECT_TRUE(r.value()->progress().value().empty());
}

}  // namespace
}  // namespace ringside::trace
