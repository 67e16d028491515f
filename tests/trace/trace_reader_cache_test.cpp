// Trace files kept open between polls (trace_reader_cache.h): what a live
// writer appends is seen by the kept reader, exactly once; a file replaced under
// the same name is opened anew; past the descriptor bound files are opened per
// use and still read.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "ringside/trace_reader_cache.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;
using testing::make_op;
using testing::make_temp_dir;

std::vector<OpRecord> ops(uint64_t first, uint64_t n) {
  std::vector<OpRecord> out;
  for (uint64_t i = first; i < first + n; ++i) out.push_back(make_op(i));
  return out;
}

std::unique_ptr<TraceWriter> writer(const std::string& path, int64_t rank) {
  auto w = TraceWriter::create(path, testing::sample_meta("cache", rank, 4));
  EXPECT_TRUE(w.ok()) << w.message();
  return w.ok() ? std::move(w.value()) : nullptr;
}

void append_and_flush(TraceWriter& w, const std::vector<OpRecord>& rows) {
  ASSERT_TRUE(w.append(std::span<const OpRecord>(rows)).ok());
  StatsRecord stats{};
  stats.t_ns = rows.back().t_dev_end_ns;
  ASSERT_TRUE(w.flush({}, stats).ok());
}

std::vector<uint64_t> seqs_from(const TraceReader& r, uint64_t first) {
  std::vector<uint64_t> out;
  EXPECT_TRUE(r.for_each_op_batch(
                   7,
                   [&](std::span<const OpRecord> batch) {
                     for (const OpRecord& op : batch) out.push_back(op.seq);
                     return true;
                   },
                   first)
                  .ok());
  return out;
}

TEST(TraceReaderCache, RowsAppendedBetweenTwoPollsAreSeenExactlyOnce) {
  const std::string dir = make_temp_dir("cache-append");
  const std::string path = dir + "/" + trace_file_name("cache", 0);
  auto w = writer(path, 0);
  ASSERT_TRUE(w);
  append_and_flush(*w, ops(0, 30));
  TraceReaderCache cache(8);
  auto first = cache.open(path);
  ASSERT_TRUE(first.ok()) << first.message();
  ASSERT_EQ(first.value()->op_count(), 30u);
  EXPECT_EQ(seqs_from(*first.value(), 0).size(), 30u);

  append_and_flush(*w, ops(30, 25));
  auto second = cache.open(path);
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second.value().get(), first.value().get()) << "the file was kept open";
  EXPECT_EQ(cache.files_opened(), 1u);
  ASSERT_EQ(second.value()->op_count(), 55u) << "the kept reader sees the appended rows";
  const std::vector<uint64_t> fresh = seqs_from(*second.value(), 30);
  ASSERT_EQ(fresh.size(), 25u);
  for (uint64_t i = 0; i < fresh.size(); ++i) EXPECT_EQ(fresh[i], 30 + i);
  ASSERT_TRUE(w->close().ok());
  auto closed = cache.open(path);
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed.value()->op_count(), 55u) << "nothing seen twice after the writer closed";
  fs::remove_all(dir);
}

TEST(TraceReaderCache, AFileReplacedUnderTheSameNameIsOpenedAnew) {
  const std::string dir = make_temp_dir("cache-replace");
  const std::string path = dir + "/" + trace_file_name("cache", 1);
  {
    auto w = writer(path, 1);
    ASSERT_TRUE(w);
    append_and_flush(*w, ops(0, 40));
    ASSERT_TRUE(w->close().ok());
  }
  TraceReaderCache cache(8);
  auto before = cache.open(path);
  ASSERT_TRUE(before.ok()) << before.message();
  EXPECT_EQ(before.value()->op_count(), 40u);
  {
    auto w = writer(path, 1);  // built under a hidden name, renamed over the old file
    ASSERT_TRUE(w);
    append_and_flush(*w, ops(100, 12));
    ASSERT_TRUE(w->close().ok());
  }
  auto after = cache.open(path);
  ASSERT_TRUE(after.ok()) << after.message();
  EXPECT_EQ(cache.files_opened(), 2u);
  EXPECT_EQ(after.value()->op_count(), 12u);
  EXPECT_EQ(seqs_from(*after.value(), 0).front(), 100u);
  EXPECT_EQ(before.value()->op_count(), 40u) << "a reader still in use keeps its own file";
  fs::remove(path);
  EXPECT_FALSE(cache.open(path).ok()) << "a file gone is not served from the cache";
  EXPECT_EQ(cache.kept(), 0u);
  fs::remove_all(dir);
}

TEST(TraceReaderCache, FilesNoLongerListedAreClosed) {
  const std::string dir = make_temp_dir("cache-retain");
  std::vector<std::string> paths;
  for (int r = 0; r < 3; ++r) {
    paths.push_back(dir + "/" + trace_file_name("cache", r));
    auto w = writer(paths.back(), r);
    ASSERT_TRUE(w);
    append_and_flush(*w, ops(0, 5));
    ASSERT_TRUE(w->close().ok());
  }
  TraceReaderCache cache(8);
  for (const std::string& p : paths) ASSERT_TRUE(cache.open(p).ok());
  ASSERT_EQ(cache.kept(), 3u);
  fs::remove(paths[1]);
  cache.retain({paths[0], paths[2]});
  EXPECT_EQ(cache.kept(), 2u) << "the removed file's descriptor is closed";
  cache.retain({});
  EXPECT_EQ(cache.kept(), 0u);
  EXPECT_TRUE(cache.open(paths[2]).ok()) << "a listed file is opened again";
  EXPECT_EQ(cache.files_opened(), 4u);
  fs::remove_all(dir);
}

TEST(TraceReaderCache, PastTheDescriptorBoundFilesAreOpenedPerUse) {
  const std::string dir = make_temp_dir("cache-bound");
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) {
    paths.push_back(dir + "/" + trace_file_name("cache", r));
    auto w = writer(paths.back(), r);
    ASSERT_TRUE(w);
    append_and_flush(*w, ops(0, 10 + static_cast<uint64_t>(r)));
    ASSERT_TRUE(w->close().ok());
  }
  TraceReaderCache cache(2);
  for (int poll = 0; poll < 3; ++poll) {
    for (size_t r = 0; r < paths.size(); ++r) {
      auto got = cache.open(paths[r]);
      ASSERT_TRUE(got.ok()) << got.message();
      EXPECT_EQ(got.value()->op_count(), 10 + r);
    }
  }
  EXPECT_EQ(cache.kept(), 2u);
  // Two files opened once, two at every poll.
  EXPECT_EQ(cache.files_opened(), 2u + 2u * 3u);
  TraceReaderCache none(0);
  for (const std::string& p : paths) EXPECT_TRUE(none.open(p).ok());
  EXPECT_EQ(none.kept(), 0u);
  fs::remove_all(dir);
}

TEST(TraceReaderCache, TheBoundFollowsTheOpenFileLimit) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  const uint64_t soft = raise_open_file_limit();
  EXPECT_GE(soft, static_cast<uint64_t>(before.rlim_cur));
  if (before.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(soft, static_cast<uint64_t>(before.rlim_max));
  }
  const uint64_t by_limit =
      soft > TraceReaderCache::kSpareDescriptors ? soft - TraceReaderCache::kSpareDescriptors : 0u;
  TraceReaderCache cache;
  EXPECT_EQ(cache.max_open(), by_limit);
  // A bound asked for is never above what the descriptors allow.
  TraceReaderCache asked(static_cast<size_t>(std::min<uint64_t>(by_limit + 1000, SIZE_MAX)));
  EXPECT_EQ(asked.max_open(), by_limit);
  TraceReaderCache few(3);
  EXPECT_EQ(few.max_open(), std::min<uint64_t>(3, by_limit));
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
}

}  // namespace
}  // namespace ringside::trace
