// Creating a trace file at a predictable name that someone else may have
// taken first: a planted symlink, FIFO or directory, or an older trace.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;
using testing::make_temp_dir;

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status write_small_trace(const std::string& path, const std::string& job) {
  auto w = TraceWriter::create(path, testing::sample_meta(job, 0, 1));
  if (!w.ok()) return w.status();
  std::vector<OpRecord> ops{testing::make_op(0), testing::make_op(1)};
  if (Status s = w.value()->append(ops); !s.ok()) return s;
  if (Status s = w.value()->flush({}, {}); !s.ok()) return s;
  return w.value()->close();
}

// Every name in `dir`, hidden ones included.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TraceCreate, PlantedSymlinkIsReplacedAndItsTargetNeverWritten) {
  const std::string dir = make_temp_dir("symlink");
  const std::string victim = dir + "/victim.txt";
  std::ofstream(victim) << "precious data";
  const std::string path = dir + "/" + trace_file_name("j", 0);
  ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);

  ASSERT_TRUE(write_small_trace(path, "j").ok());
  EXPECT_EQ(contents(victim), "precious data") << "the symlink's target was written";
  EXPECT_FALSE(fs::is_symlink(path)) << "the trace replaced the symlink";
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->op_count(), 2u);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{trace_file_name("j", 0), "victim.txt"}))
      << "no temporary file is left";
  fs::remove_all(dir);
}

TEST(TraceCreate, PlantedDanglingSymlinkCreatesNothingAtItsTarget) {
  const std::string dir = make_temp_dir("dangling");
  const std::string target = dir + "/created-through-link";
  const std::string path = dir + "/" + trace_file_name("j", 0);
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
  ASSERT_TRUE(write_small_trace(path, "j").ok());
  EXPECT_FALSE(fs::exists(target));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  fs::remove_all(dir);
}

// Opening a FIFO for writing would block until a reader comes: the writer never opens it.
TEST(TraceCreate, PlantedFifoIsReplacedWithoutBlocking) {
  const std::string dir = make_temp_dir("fifo");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  ASSERT_TRUE(write_small_trace(path, "j").ok());
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  fs::remove_all(dir);
}

TEST(TraceCreate, DirectoryAtTheNameIsAnErrorNamingItAndLeavesNothingBehind) {
  const std::string dir = make_temp_dir("dirname");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  fs::create_directory(path);
  std::ofstream(path + "/keep") << "x";
  const Status s = write_small_trace(path, "j");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_EQ(names_in(dir), std::vector<std::string>{trace_file_name("j", 0)})
      << "the temporary file was removed";
  EXPECT_TRUE(fs::exists(path + "/keep"));
  fs::remove_all(dir);
}

TEST(TraceCreate, OlderTraceIsReplacedAndReadersOfItKeepTheirCopy) {
  const std::string dir = make_temp_dir("older");
  const std::string path = dir + "/" + trace_file_name("j", 0);
  ASSERT_TRUE(write_small_trace(path, "old").ok());
  auto old_reader = TraceReader::open(path);
  ASSERT_TRUE(old_reader.ok()) << old_reader.message();
  ASSERT_TRUE(write_small_trace(path, "new").ok());
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->meta().job_id, "new");
  EXPECT_EQ(old_reader.value()->meta().job_id, "old");
  std::vector<OpRecord> ops(2);
  auto n = old_reader.value()->read_ops(0, ops);
  ASSERT_TRUE(n.ok()) << n.message();
  EXPECT_EQ(n.value(), 2u) << "the older file was not truncated under its reader";
  EXPECT_EQ(ops[1].seq, testing::make_op(1).seq);
  fs::remove_all(dir);
}

TEST(TraceCreate, UnwritableDirectoryIsAnErrorNamingIt) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  const std::string dir = make_temp_dir("readonly");
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  const Status s = write_small_trace(dir + "/" + trace_file_name("j", 0), "j");
  fs::permissions(dir, fs::perms::owner_all);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Permission denied"), std::string::npos) << s.message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
