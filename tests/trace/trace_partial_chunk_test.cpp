// A table's partial last chunk: flushed unfiltered (copied, not decompressed, by a reader
// that follows the file), rewritten where it was at each flush instead of in new space,
// and compressed once full or when the file closes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_schema.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

using testing::make_temp_dir;

struct ChunkInfo {
  unsigned filter_mask = 0;
  haddr_t addr = 0;
  hsize_t size = 0;
};

// The /ops chunk that holds row `row`, as the file (not this process's writer) records it.
ChunkInfo ops_chunk(const std::string& path, uint64_t row) {
  ChunkInfo c;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
  EXPECT_GE(f, 0);
  hid_t d = H5Dopen2(f, kOpsDataset, H5P_DEFAULT);
  EXPECT_GE(d, 0);
  hsize_t offset[1] = {row};
  EXPECT_GE(H5Dget_chunk_info_by_coord(d, offset, &c.filter_mask, &c.addr, &c.size), 0);
  H5Dclose(d);
  H5Fclose(f);
  H5Pclose(fapl);
  return c;
}

std::vector<OpRecord> ops_of(const std::string& path) {
  auto r = TraceReader::open(path);
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return {};
  std::vector<OpRecord> rows(r.value()->op_count());
  auto n = r.value()->read_ops(0, rows);
  EXPECT_TRUE(n.ok()) << n.message();
  rows.resize(n.ok() ? n.value() : 0);
  return rows;
}

std::vector<OpRecord> ops(uint64_t first, size_t n) {
  std::vector<OpRecord> v;
  for (size_t i = 0; i < n; ++i) v.push_back(testing::make_op(first + i));
  return v;
}

// A writer of /ops chunks of 64 records.
Result<std::unique_ptr<TraceWriter>> writer_of_64_op_chunks(const std::string& path) {
  WriterOptions o;
  o.chunk_records = 64;
  return TraceWriter::create(path, testing::sample_meta("j", 0, 1), o);
}

// Appends ops [first, first + n), flushing after every `per_flush` of them.
void append_flushing(TraceWriter& w, uint64_t first, size_t n, size_t per_flush) {
  for (size_t done = 0; done < n; done += per_flush) {
    auto rows = ops(first + done, std::min(per_flush, n - done));
    ASSERT_TRUE(w.append(std::span<const OpRecord>(rows)).ok());
    ASSERT_TRUE(w.flush({}, {}).ok());
  }
}

void expect_seqs(const std::vector<OpRecord>& got, size_t n) {
  ASSERT_EQ(got.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(got[i].seq, testing::make_op(i).seq) << "row " << i;
}

TEST(PartialChunk, FlushedUnfilteredAndCheckedThenCompressedWhenFullOrClosed) {
  const std::string dir = make_temp_dir("partial");
  const std::string path = dir + "/t.h5";
  auto w = writer_of_64_op_chunks(path);
  ASSERT_TRUE(w.ok()) << w.message();
  // Two ops a flush: a chunk takes 32 flushes to fill.
  append_flushing(*w.value(), 0, 100, 2);
  // Chunk 0 is full: compressed.  Chunk 1 holds 36 rows: shuffle, deflate and Fletcher-32
  // skipped, the whole chunk stored.
  const ChunkInfo full = ops_chunk(path, 0), partial = ops_chunk(path, 64);
  EXPECT_EQ(full.filter_mask, 0u);
  EXPECT_EQ(partial.filter_mask, 7u);
  EXPECT_EQ(partial.size % 64, 0u);
  EXPECT_LT(full.size, partial.size);
  expect_seqs(ops_of(path), 100);

  // More rows in the same chunk: written over the same place, read back whole.
  append_flushing(*w.value(), 100, 10, 2);
  const ChunkInfo again = ops_chunk(path, 64);
  EXPECT_EQ(again.addr, partial.addr);
  EXPECT_EQ(again.size, partial.size);
  expect_seqs(ops_of(path), 110);

  ASSERT_TRUE(w.value()->close().ok());
  const ChunkInfo closed = ops_chunk(path, 64);
  EXPECT_EQ(closed.filter_mask, 0u);
  EXPECT_LT(closed.size, partial.size);
  expect_seqs(ops_of(path), 110);
  std::filesystem::remove_all(dir);
}

// A reader that reads the chunk while the writer rewrites it, or a writer killed in the
// middle of rewriting it, leaves anything in the bytes after the rows the last complete
// flush announced: those rows read back as written.
TEST(PartialChunk, RowsAFlushAnnouncedReadBackWhateverFollowsThem) {
  const std::string dir = make_temp_dir("partialtorn");
  const std::string path = dir + "/t.h5";
  auto w = writer_of_64_op_chunks(path);
  ASSERT_TRUE(w.ok()) << w.message();
  append_flushing(*w.value(), 0, 100, 2);
  const ChunkInfo partial = ops_chunk(path, 64);
  ASSERT_EQ(partial.filter_mask, 7u);
  // Every byte after the chunk's 36 rows made something else, as half a rewrite would.
  const size_t record = partial.size / 64;
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const std::vector<unsigned char> junk(partial.size - 36 * record, 0xa5);
  ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(partial.addr + 36 * record)),
            static_cast<ssize_t>(junk.size()));
  ::close(fd);
  expect_seqs(ops_of(path), 100);
  // The next flush writes the chunk whole again.
  append_flushing(*w.value(), 100, 10, 10);
  expect_seqs(ops_of(path), 110);
  ASSERT_TRUE(w.value()->close().ok());
  expect_seqs(ops_of(path), 110);
  std::filesystem::remove_all(dir);
}

// A table that gains many rows a flush fills its chunk in a few flushes: its partial
// chunk is flushed compressed, which then leaves less behind than one unfiltered chunk
// would (and a reader decompresses most of what it reads anyway).
TEST(PartialChunk, ATableThatFillsItsChunkInAFewFlushesFlushesItCompressed) {
  const std::string dir = make_temp_dir("partialfast");
  const std::string path = dir + "/t.h5";
  auto w = writer_of_64_op_chunks(path);
  ASSERT_TRUE(w.ok()) << w.message();
  append_flushing(*w.value(), 0, 100, 20);
  EXPECT_EQ(ops_chunk(path, 64).filter_mask, 0u);
  expect_seqs(ops_of(path), 100);
  // A single flush of everything (a writer that flushes once, at the end), likewise.
  const std::string once = dir + "/once.h5";
  auto w1 = writer_of_64_op_chunks(once);
  ASSERT_TRUE(w1.ok()) << w1.message();
  append_flushing(*w1.value(), 0, 100, 100);
  EXPECT_EQ(ops_chunk(once, 64).filter_mask, 0u);
  ASSERT_TRUE(w.value()->close().ok());
  ASSERT_TRUE(w1.value()->close().ok());
  std::filesystem::remove_all(dir);
}

// The probe flushes every second, a few rows each time.  Each flush used to compress
// every partial chunk again and write it to new space, leaving the old one (a writer
// under SWMR never frees a chunk a reader may still be reading): 2000 flushes of 3 ops
// each made a 7.3 MB file.  Rewritten in place, the file grows with its rows: 1.6 MB
// (about 800 bytes a flush, most of it the /stats and /progress rows and the /pending
// snapshot).
TEST(PartialChunk, ManySmallFlushesDoNotGrowTheFileByAChunkEach) {
  const std::string dir = make_temp_dir("partialgrow");
  const std::string path = dir + "/t.h5";
  auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1), flushing_writer_options());
  ASSERT_TRUE(w.ok()) << w.message();
  constexpr int kFlushes = 2000;
  for (int f = 0; f < kFlushes; ++f) {
    auto rows = ops(static_cast<uint64_t>(f) * 3, 3);
    ASSERT_TRUE(w.value()->append(std::span<const OpRecord>(rows)).ok());
    ASSERT_TRUE(w.value()->flush({}, {}).ok());
  }
  const auto live_bytes = std::filesystem::file_size(path);
  ASSERT_TRUE(w.value()->close().ok());
  const auto bytes = std::filesystem::file_size(path);
  RecordProperty("live_bytes_per_flush", static_cast<int>(live_bytes / kFlushes));
  std::printf("file: %ju bytes live, %ju closed, over %d flushes\n",
              static_cast<uintmax_t>(live_bytes), static_cast<uintmax_t>(bytes), kFlushes);
  EXPECT_LT(live_bytes, 2000u * kFlushes);
  expect_seqs(ops_of(path), 3 * kFlushes);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
