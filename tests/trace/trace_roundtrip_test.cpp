#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"
#include "trace_types.h"

namespace ringside::trace {
namespace {

using testing::make_temp_dir;

void expect_op_eq(const OpRecord& a, const OpRecord& b, uint64_t i) {
#define X(type, name, unit, desc) EXPECT_EQ(a.name, b.name) << "op " << i << " field " #name;
  RINGSIDE_OP_FIELDS(X)
#undef X
}

TEST(TraceRoundTrip, EveryFieldOfEveryDatasetSurvives) {
  const std::string dir = make_temp_dir("rt");
  const std::string path = dir + "/" + trace_file_name("job1", 3);
  TraceMeta meta = testing::sample_meta("job1", 3, 8);
  const uint64_t kOps = 10'000;  // several chunks plus a partial one
  std::vector<OpRecord> pending = {testing::make_op(kOps), testing::make_op(kOps + 1)};
  pending[0].status = static_cast<uint8_t>(OpStatus::kHostPending);
  pending[0].t_exit_ns = kUnknownTime;
  {
    WriterOptions opts;
    opts.chunk_records = 1024;
    auto w = TraceWriter::create(path, meta, opts);
    ASSERT_TRUE(w.ok()) << w.message();
    std::vector<OpRecord> ops;
    for (uint64_t i = 0; i < kOps; ++i) ops.push_back(testing::make_op(i));
    // Uneven batches exercise chunk boundaries.
    ASSERT_TRUE(w.value()->append(std::span(ops).subspan(0, 1500)).ok());
    ASSERT_TRUE(w.value()->append(std::span(ops).subspan(1500)).ok());
    for (uint64_t i = 0; i < 5; ++i) {
      SampleRecord s = testing::make_sample(i);
      EventRecord e = testing::make_event(i);
      CommRecord c = testing::make_comm(i);
      ASSERT_TRUE(w.value()->append(std::span(&s, 1)).ok());
      ASSERT_TRUE(w.value()->append(std::span(&e, 1)).ok());
      ASSERT_TRUE(w.value()->append(std::span(&c, 1)).ok());
    }
    std::vector<LinkRecord> links(3);
    for (size_t i = 0; i < links.size(); ++i) {
      uint64_t v = 1000 * (i + 1);
#define X(type, name, unit, desc) links[i].name = static_cast<type>(v++);
      RINGSIDE_LINK_FIELDS(X)
#undef X
    }
    ASSERT_TRUE(w.value()->append(std::span<const LinkRecord>(links)).ok());
    StatsRecord st{};
    st.ops_recorded = kOps;
    st.ops_dropped = 7;
    ASSERT_TRUE(w.value()->flush({}, st).ok());
    st.t_ns = 99;
    ASSERT_TRUE(w.value()->flush(pending, st).ok());
    EXPECT_EQ(w.value()->flushes(), 2u);
    ASSERT_TRUE(w.value()->close().ok());
  }
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  const TraceReader& reader = *r.value();
  // Metadata: every attribute.
#define X(kind, name, desc) EXPECT_EQ(reader.meta().name, meta.name) << #name;
  meta.schema_version = kSchemaVersion;
  meta.simulated = 1;  // derived from the device name
  RINGSIDE_META_FIELDS(X)
#undef X
  ASSERT_EQ(reader.op_count(), kOps);
  uint64_t seen = 0;
  ASSERT_TRUE(reader
                  .for_each_op_batch(777,
                                     [&](std::span<const OpRecord> batch) {
                                       for (const OpRecord& op : batch) {
                                         expect_op_eq(op, testing::make_op(seen), seen);
                                         ++seen;
                                       }
                                       return true;
                                     })
                  .ok());
  EXPECT_EQ(seen, kOps);

  auto samples = reader.samples();
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples.value().size(), 5u);
  auto events = reader.events();
  ASSERT_TRUE(events.ok());
  auto comms = reader.comms();
  ASSERT_TRUE(comms.ok());
  for (uint64_t i = 0; i < 5; ++i) {
    SampleRecord es = testing::make_sample(i);
    const SampleRecord& s = samples.value()[i];
#define X(type, name, unit, desc) EXPECT_EQ(s.name, es.name) << #name;
    RINGSIDE_SAMPLE_FIELDS(X)
#undef X
    EventRecord ee = testing::make_event(i);
    const EventRecord& e = events.value()[i];
    EXPECT_EQ(e.t_ns, ee.t_ns);
    EXPECT_EQ(e.comm_id, ee.comm_id);
    EXPECT_EQ(e.seq, ee.seq);
    EXPECT_EQ(e.value, ee.value);
    EXPECT_EQ(e.device, ee.device);
    EXPECT_EQ(e.kind, ee.kind);
    EXPECT_STREQ(e.text, ee.text);
    CommRecord ec = testing::make_comm(i);
    const CommRecord& c = comms.value()[i];
#define X(type, name, unit, desc) EXPECT_EQ(c.name, ec.name) << #name;
    RINGSIDE_COMM_FIELDS(X)
#undef X
  }
  auto links = reader.links();
  ASSERT_TRUE(links.ok()) << links.message();
  ASSERT_EQ(links.value().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    uint64_t v = 1000 * (i + 1);
#define X(type, name, unit, desc) EXPECT_EQ(links.value()[i].name, static_cast<type>(v++)) << #name;
    RINGSIDE_LINK_FIELDS(X)
#undef X
  }
  auto stats = reader.stats();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats.value().size(), 2u);
  EXPECT_EQ(stats.value()[0].flush_index, 1u);
  EXPECT_EQ(stats.value()[1].flush_index, 2u);
  EXPECT_EQ(stats.value()[1].t_ns, 99);
  EXPECT_EQ(stats.value()[1].ops_dropped, 7u);
  EXPECT_EQ(stats.value()[1].pending_ops, 2u);
  auto last = reader.last_pending();
  ASSERT_TRUE(last.ok()) << last.message();
  ASSERT_EQ(last.value().size(), 2u);
  expect_op_eq(last.value()[0], pending[0], 0);
  expect_op_eq(last.value()[1], pending[1], 1);
  std::filesystem::remove_all(dir);
}

TEST(TraceRoundTrip, OpenedForItsOpsAloneAFileReadsTheSameOps) {
  const std::string dir = make_temp_dir("opsonly");
  const std::string path = dir + "/" + trace_file_name("job1", 2);
  std::vector<OpRecord> ops;
  for (uint64_t i = 0; i < 3000; ++i) ops.push_back(testing::make_op(i));
  {
    WriterOptions opts;
    opts.chunk_records = 512;
    auto w = TraceWriter::create(path, testing::sample_meta("job1", 2, 4), opts);
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_TRUE(w.value()->append(std::span<const OpRecord>(ops)).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  auto r = TraceReader::open_ops(path);
  ASSERT_TRUE(r.ok()) << r.message();
  const TraceReader& reader = *r.value();
  ASSERT_EQ(reader.op_count(), ops.size());
  std::vector<OpRecord> back(ops.size() - 100);
  auto got = reader.read_ops(100, back);
  ASSERT_TRUE(got.ok()) << got.message();
  ASSERT_EQ(got.value(), back.size());
  for (size_t i = 0; i < back.size(); ++i) expect_op_eq(back[i], ops[i + 100], i + 100);
  // Nothing else was opened: its metadata is empty, and another table is an error, not
  // a crash.
  EXPECT_TRUE(reader.meta().job_id.empty());
  EXPECT_FALSE(reader.samples().ok());
  EXPECT_FALSE(reader.links().ok());
  EXPECT_FALSE(reader.last_pending().ok());
  // A file that is not a trace is refused as by open().
  const std::string bad = dir + "/bad.h5";
  { std::ofstream(bad) << "not an HDF5 file"; }
  auto refused = TraceReader::open_ops(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("not an HDF5 file"), std::string::npos) << refused.message();
  std::filesystem::remove_all(dir);
}

TEST(TraceRoundTrip, AFileWithoutLinksReadsAsNoLinks) {
  // Files written before the links dataset existed: it is optional.
  const std::string dir = make_temp_dir("nolinks");
  const std::string path = dir + "/t.h5";
  {
    auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1));
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_TRUE(w.value()->close().ok());
  }
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    EXPECT_GE(H5Ldelete(f, kLinksDataset, H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  auto links = r.value()->links();
  ASSERT_TRUE(links.ok());
  EXPECT_TRUE(links.value().empty());
  std::filesystem::remove_all(dir);
}

TEST(TraceRoundTrip, PendingSnapshotIsClearedByALaterEmptyFlush) {
  const std::string dir = make_temp_dir("pend");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1));
  ASSERT_TRUE(w.ok()) << w.message();
  OpRecord op = testing::make_op(1);
  ASSERT_TRUE(w.value()->flush(std::span(&op, 1), {}).ok());
  ASSERT_TRUE(w.value()->flush({}, {}).ok());
  ASSERT_TRUE(w.value()->close().ok());
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  auto last = r.value()->last_pending();
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last.value().empty());
  std::filesystem::remove_all(dir);
}

// Each snapshot is written over one no reader needs: /pending stays as large as
// the largest snapshots, however many flushes there are, and every flush's
// snapshot reads back whole, also while snapshots grow past a region.
TEST(TraceRoundTrip, PendingSnapshotsReuseRowsAndReadBackAfterEveryFlush) {
  const std::string dir = make_temp_dir("pendreuse");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  WriterOptions small;
  small.chunk_records = 4;  // regions of whole 4-row chunks: growth is exercised
  auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1), small);
  ASSERT_TRUE(w.ok()) << w.message();
  const std::vector<size_t> sizes = {3, 5, 0, 2, 9, 1, 0, 0, 7, 3, 3, 12, 2};
  uint64_t seq = 0;
  for (int round = 0; round < 20; ++round) {
    for (size_t n : sizes) {
      std::vector<OpRecord> pending;
      for (size_t k = 0; k < n; ++k) pending.push_back(testing::make_op(seq++));
      ASSERT_TRUE(w.value()->flush(pending, {}).ok());
      auto r = TraceReader::open(path);
      ASSERT_TRUE(r.ok()) << r.message();
      auto last = r.value()->last_pending();
      ASSERT_TRUE(last.ok()) << last.message();
      ASSERT_EQ(last.value().size(), n) << "round " << round;
      for (size_t k = 0; k < n; ++k) EXPECT_EQ(last.value()[k].seq, pending[k].seq);
    }
  }
  ASSERT_TRUE(w.value()->close().ok());
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, kPendingDataset, H5P_DEFAULT);
  hid_t space = H5Dget_space(d);
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(space, &rows, nullptr);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
  // 260 flushes, 47 rows each 13 flushes: appended, that would be 940 rows.
  // Regions of 12 rows at most, doubled: a few of 4..24 rows.
  EXPECT_LE(rows, 64u);
  std::filesystem::remove_all(dir);
}

// A live reader that read a /stats row before two more flushes wrote over its
// snapshot gets the newest complete snapshot, not an error or a mix.
TEST(TraceRoundTrip, PendingOfAStatsRowWrittenOverSinceGivesTheNewestSnapshot) {
  const std::string dir = make_temp_dir("pendover");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1));
  ASSERT_TRUE(w.ok()) << w.message();
  std::vector<OpRecord> first = {testing::make_op(1), testing::make_op(2)};
  ASSERT_TRUE(w.value()->flush(first, {}).ok());
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  auto stats = r.value()->stats();
  ASSERT_TRUE(stats.ok());
  const StatsRecord held = stats.value().back();
  std::vector<OpRecord> second = {testing::make_op(3)};
  std::vector<OpRecord> third = {testing::make_op(4), testing::make_op(5), testing::make_op(6)};
  ASSERT_TRUE(w.value()->flush(second, {}).ok());
  ASSERT_TRUE(w.value()->flush(third, {}).ok());  // over the first one's rows
  auto fresh = TraceReader::open(path);
  ASSERT_TRUE(fresh.ok()) << fresh.message();
  auto p = fresh.value()->pending_of(held);
  ASSERT_TRUE(p.ok()) << p.message();
  ASSERT_EQ(p.value().size(), 3u);
  EXPECT_EQ(p.value()[0].seq, 4u);
  EXPECT_EQ(p.value()[2].seq, 6u);
  ASSERT_TRUE(w.value()->close().ok());
  std::filesystem::remove_all(dir);
}

// A writer killed inside a flush can leave that flush's /pending rows visible
// without its stats row, some never written.  The last complete snapshot must
// still be the answer.
TEST(TraceRoundTrip, PendingRowsOfAnUnfinishedFlushAreIgnored) {
  const std::string dir = make_temp_dir("pendcut");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  OpRecord outstanding = testing::make_op(16);
  outstanding.status = static_cast<uint8_t>(OpStatus::kDevicePending);
  {
    auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1));
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_TRUE(w.value()->flush(std::span(&outstanding, 1), {}).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  {
    // Flush 2's first pending row, as a kill right after writing it leaves it.
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t d = H5Dopen2(f, kPendingDataset, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    hid_t space = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space, &n, nullptr);
    H5Sclose(space);
    const hsize_t grown = n + 2;  // the second row never written: fill value
    ASSERT_GE(H5Dset_extent(d, &grown), 0);
    hid_t file_space = H5Dget_space(d);
    const hsize_t one = 1;
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &n, nullptr, &one, nullptr);
    hid_t mem_space = H5Screate_simple(1, &one, nullptr);
    hid_t type = dataset_spec(kPendingDataset).make_memory_type();
    PendingRecord row{2, testing::make_op(17)};
    EXPECT_GE(H5Dwrite(d, type, mem_space, file_space, H5P_DEFAULT, &row), 0);
    H5Tclose(type);
    H5Sclose(mem_space);
    H5Sclose(file_space);
    H5Dclose(d);
    H5Fclose(f);
  }
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  auto last = r.value()->last_pending();
  ASSERT_TRUE(last.ok()) << last.message();
  ASSERT_EQ(last.value().size(), 1u);
  expect_op_eq(last.value()[0], outstanding, 0);
  std::filesystem::remove_all(dir);
}

TEST(TraceRoundTrip, FileNameCarriesJobAndPaddedRank) {
  EXPECT_EQ(trace_file_name("12345", 7), "ringside-12345-r000007.h5");
  EXPECT_EQ(trace_file_name("a/b c", 0), "ringside-a_b_c-r000000.h5");
}

TEST(TraceRoundTrip, WriterRejectsBadOptionsAndUnwritablePaths) {
  WriterOptions bad;
  bad.chunk_records = 0;
  auto w = TraceWriter::create("/tmp/never.h5", testing::sample_meta("j", 0, 1), bad);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.message().find("chunk_records"), std::string::npos);
  WriterOptions bad_tables;
  bad_tables.table_chunk_records = 0;
  auto w1 = TraceWriter::create("/tmp/never.h5", testing::sample_meta("j", 0, 1), bad_tables);
  ASSERT_FALSE(w1.ok());
  EXPECT_NE(w1.message().find("table_chunk_records"), std::string::npos) << w1.message();
  EXPECT_FALSE(std::filesystem::exists("/tmp/never.h5"));
  auto w2 = TraceWriter::create("/nonexistent-dir/x.h5", testing::sample_meta("j", 0, 1));
  ASSERT_FALSE(w2.ok());
  EXPECT_NE(w2.message().find("/nonexistent-dir/x.h5"), std::string::npos) << w2.message();
}

TEST(TraceRoundTrip, ClosedWriterReturnsErrors) {
  const std::string dir = make_temp_dir("closed");
  auto w = TraceWriter::create(dir + "/t.h5", testing::sample_meta("j", 0, 1));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w.value()->close().ok());
  OpRecord op = testing::make_op(0);
  auto s = w.value()->append(std::span(&op, 1));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("closed"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
