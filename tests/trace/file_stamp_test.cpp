// Which file a trace name refers to between polls (file_stamp.h): an inode may be
// given to a new file once the old one is removed, so caches that know files by
// name also compare creation time and size.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ringside/file_stamp.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;

FileStamp stamp(uint64_t ino, uint64_t size, int64_t btime) {
  FileStamp s;
  s.dev = 7;
  s.ino = ino;
  s.size = size;
  s.btime_ns = btime;
  return s;
}

TEST(FileStamp, AnInodeGivenToANewFileIsAnotherFile) {
  EXPECT_TRUE(same_file(stamp(5, 100, 1000), stamp(5, 100, 1000)));
  EXPECT_TRUE(same_file(stamp(5, 100, 1000), stamp(5, 4096, 1000))) << "a file grows";
  EXPECT_FALSE(same_file(stamp(5, 100, 1000), stamp(6, 100, 1000))) << "another inode";
  EXPECT_FALSE(same_file(stamp(5, 100, 1000), stamp(5, 100, 2000))) << "created again";
  // HDF5 may release space it had reserved at the end of a file it closes.
  EXPECT_TRUE(same_file(stamp(5, 100, 1000), stamp(5, 90, 1000))) << "a file that shrank at close";
  // Without creation times (file systems that keep none), a smaller file is another:
  // trace files only grow.
  EXPECT_FALSE(same_file(stamp(5, 100, 0), stamp(5, 99, 0)));
  EXPECT_TRUE(same_file(stamp(5, 100, 0), stamp(5, 100, 0)));
  FileStamp other_dev = stamp(5, 100, 1000);
  other_dev.dev = 8;
  EXPECT_FALSE(same_file(stamp(5, 100, 1000), other_dev));
}

TEST(FileStamp, AWriteChangesTheStampOfTheSameFile) {
  const std::string dir = testing::make_temp_dir("file-stamp");
  const std::string path = dir + "/f";
  { std::ofstream(path) << "abc"; }
  auto before = file_stamp(path);
  ASSERT_TRUE(before.ok()) << before.message();
  EXPECT_EQ(before->size, 3u);
  { std::ofstream(path, std::ios::app) << "defg"; }
  auto after = file_stamp(path);
  ASSERT_TRUE(after.ok()) << after.message();
  EXPECT_EQ(after->size, 7u);
  EXPECT_FALSE(before.value() == after.value());
  EXPECT_TRUE(same_file(before.value(), after.value()));
  auto gone = file_stamp(dir + "/missing");
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.message().find("/missing: cannot be examined"), std::string::npos)
      << gone.message();
  fs::remove_all(dir);
}

// The listing's header cache does not hold files open: a trace removed and written
// again under its name (here with another world size) may get the old inode, and
// must still be listed from its own header.
TEST(TraceDirCache, ATraceWrittenAgainUnderItsNameIsListedFromItsOwnHeader) {
  const std::string dir = testing::make_temp_dir("dir-cache-reused");
  const std::string path = dir + "/" + trace_file_name("again", 0);
  auto write = [&](int64_t world) {
    auto w = TraceWriter::create(path, testing::sample_meta("again", 0, world));
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_TRUE(w.value()->close().ok());
  };
  write(4);
  TraceDirCache cache;
  auto first = list_trace_dir(dir, std::nullopt, &cache);
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(first->world_size, 4);
  fs::remove(path);
  write(6);
  auto second = list_trace_dir(dir, std::nullopt, &cache);
  ASSERT_TRUE(second.ok()) << second.message();
  EXPECT_EQ(second->world_size, 6);
  fs::remove_all(dir);
}

// A file that cannot be listed is checked again only once it changed: a check costs a
// child process, at every poll of a watch.  One changed within the last
// TraceDirCache::kSettledNs (a writer may still be creating it) is checked at every
// listing.
TEST(TraceDirCache, AFileThatCannotBeListedIsCheckedAgainOnlyOnceItChanged) {
  const std::string dir = testing::make_temp_dir("dir-cache-failed");
  auto write = [&](int64_t rank) {
    auto w = TraceWriter::create(dir + "/" + trace_file_name("failed", rank),
                                 testing::sample_meta("failed", rank, 3));
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_TRUE(w.value()->close().ok());
  };
  write(0);
  write(1);
  const std::string bad = dir + "/" + trace_file_name("failed", 2);
  { std::ofstream(bad) << "not an HDF5 file"; }
  fs::last_write_time(bad, fs::last_write_time(bad) - std::chrono::hours(1));
  TraceDirCache cache;
  auto list = [&] {
    auto l = list_trace_dir(dir, std::nullopt, &cache);
    EXPECT_TRUE(l.ok()) << l.message();
    return l.ok() ? l.value() : TraceDirListing{};
  };
  const TraceDirListing first = list();
  ASSERT_EQ(first.bad_files.size(), 1u);
  EXPECT_NE(first.bad_files[0].find(bad), std::string::npos) << first.bad_files[0];
  EXPECT_EQ(cache.files_checked, 3u);
  const TraceDirListing second = list();
  EXPECT_EQ(second.bad_files, first.bad_files);
  EXPECT_EQ(second.missing_ranks, (std::vector<int64_t>{2}));
  EXPECT_EQ(cache.files_checked, 3u) << "a file that failed and did not change was checked again";
  // Written to just now: checked, and again at the next listing.
  { std::ofstream(bad, std::ios::app) << "!"; }
  EXPECT_EQ(list().bad_files.size(), 1u);
  EXPECT_EQ(list().bad_files.size(), 1u);
  EXPECT_EQ(cache.files_checked, 5u);
  // Replaced by a trace: listed.
  fs::remove(bad);
  write(2);
  const TraceDirListing last = list();
  EXPECT_TRUE(last.bad_files.empty()) << last.bad_files.front();
  EXPECT_EQ(last.files.size(), 3u);
  EXPECT_TRUE(last.missing_ranks.empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
