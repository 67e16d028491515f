// Bad input: each case gets its own clear error, and never a crash.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;
using testing::make_temp_dir;

std::string write_trace(const std::string& dir, const std::string& job, int64_t rank, int64_t world,
                        uint64_t ops = 5000) {
  const std::string path = dir + "/" + trace_file_name(job, rank);
  auto w = TraceWriter::create(path, testing::sample_meta(job, rank, world));
  EXPECT_TRUE(w.ok()) << w.message();
  std::vector<OpRecord> records;
  for (uint64_t i = 0; i < ops; ++i) records.push_back(testing::make_op(i));
  EXPECT_TRUE(w.value()->append(records).ok());
  EXPECT_TRUE(w.value()->flush({}, {}).ok());
  EXPECT_TRUE(w.value()->close().ok());
  return path;
}

// Opens and reads everything; returns the first error message, "" if none.
std::string read_everything(const std::string& path) {
  auto r = TraceReader::open(path);
  if (!r.ok()) return r.message();
  Status s = r.value()->for_each_op_batch(1000, [](std::span<const OpRecord>) { return true; });
  if (!s.ok()) return s.message();
  if (auto x = r.value()->samples(); !x.ok()) return x.message();
  if (auto x = r.value()->events(); !x.ok()) return x.message();
  if (auto x = r.value()->comms(); !x.ok()) return x.message();
  if (auto x = r.value()->stats(); !x.ok()) return x.message();
  if (auto x = r.value()->last_pending(); !x.ok()) return x.message();
  return "";
}

TEST(TraceErrors, MissingFile) {
  auto r = TraceReader::open("/tmp/ringside-no-such-file.h5");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("no such file"), std::string::npos) << r.message();
}

TEST(TraceErrors, NotHdf5) {
  const std::string dir = make_temp_dir("nothdf5");
  std::ofstream(dir + "/x.h5") << "this is not an HDF5 file at all";
  auto r = TraceReader::open(dir + "/x.h5");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not an HDF5 file"), std::string::npos) << r.message();
  fs::remove_all(dir);
}

TEST(TraceErrors, TruncatedFile) {
  const std::string dir = make_temp_dir("trunc");
  const std::string path = write_trace(dir, "j", 0, 1, 20000);
  const auto size = fs::file_size(path);
  for (double keep : {0.9, 0.5, 0.1}) {
    const std::string cut = dir + "/cut.h5";
    fs::copy_file(path, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, static_cast<uintmax_t>(static_cast<double>(size) * keep));
    std::string err = read_everything(cut);
    EXPECT_FALSE(err.empty()) << "truncated to " << keep << " read without error";
    EXPECT_NE(err.find(cut), std::string::npos) << err;
  }
  fs::remove_all(dir);
}

TEST(TraceErrors, BitFlipsAreDetectedNotReturnedAsGarbage) {
  const std::string dir = make_temp_dir("flip");
  const std::string path = write_trace(dir, "j", 0, 1, 20000);
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Flip bits at many positions; every read must either fail with a message
  // naming the file or return exactly the records that were written.
  int detected = 0;
  const size_t step = bytes.size() / 40;
  for (size_t pos = 64; pos < bytes.size(); pos += step) {
    std::vector<char> copy = bytes;
    copy[pos] = static_cast<char>(copy[pos] ^ 0x5a);
    const std::string bad = dir + "/bad.h5";
    std::ofstream(bad, std::ios::binary)
        .write(copy.data(), static_cast<std::streamsize>(copy.size()));
    std::string err = read_everything(bad);
    // A long-running reader (ringside watch) meets such files poll after poll.
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0)
        << "a read of the file flipped at byte " << pos << " left HDF5 objects open";
    if (!err.empty()) {
      ++detected;
      EXPECT_NE(err.find(bad), std::string::npos) << err;
      continue;
    }
    auto r = TraceReader::open(bad);
    ASSERT_TRUE(r.ok());
    uint64_t i = 0;
    bool same = true;
    (void)r.value()->for_each_op_batch(4096, [&](std::span<const OpRecord> batch) {
      for (const OpRecord& op : batch) {
        OpRecord expect = testing::make_op(i++);
        same = same && std::memcmp(&op.t_enter_ns, &expect.t_enter_ns, sizeof(int64_t) * 4) == 0 &&
               op.seq == expect.seq && op.bytes == expect.bytes;
      }
      return true;
    });
    EXPECT_TRUE(same) << "a flip at byte " << pos << " returned altered records silently";
  }
  EXPECT_GT(detected, 0);
  fs::remove_all(dir);
}

TEST(TraceErrors, WrongSchemaVersion) {
  const std::string dir = make_temp_dir("ver");
  const std::string path = write_trace(dir, "j", 0, 1, 10);
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
    int64_t v = 7;
    H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    H5Fclose(f);
  }
  auto r = TraceReader::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("schema_version 7"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("upgrade"), std::string::npos) << r.message();
  auto listing = list_trace_dir(dir);
  ASSERT_FALSE(listing.ok());
  EXPECT_NE(listing.message().find("schema_version 7"), std::string::npos) << listing.message();
  fs::remove_all(dir);
}

TEST(TraceErrors, HdfFileThatIsNotATrace) {
  const std::string dir = make_temp_dir("foreign");
  const std::string path = dir + "/ringside-x-r000000.h5";
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose(f);
  auto r = TraceReader::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("not a ringside trace"), std::string::npos) << r.message();
  fs::remove_all(dir);
}

TEST(TraceErrors, EmptyDirectoryAndNotADirectory) {
  const std::string dir = make_temp_dir("empty");
  auto l = list_trace_dir(dir);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.message().find("no ringside trace files"), std::string::npos) << l.message();
  std::ofstream(dir + "/file") << "x";
  auto l2 = list_trace_dir(dir + "/file");
  ASSERT_FALSE(l2.ok());
  EXPECT_NE(l2.message().find("not a directory"), std::string::npos) << l2.message();
  auto l3 = list_trace_dir(dir + "/nope");
  ASSERT_FALSE(l3.ok());
  EXPECT_NE(l3.message().find("no such directory"), std::string::npos) << l3.message();
  fs::remove_all(dir);
}

TEST(TraceErrors, MissingRankFileIsListed) {
  const std::string dir = make_temp_dir("missing");
  write_trace(dir, "j", 0, 4, 10);
  write_trace(dir, "j", 1, 4, 10);
  write_trace(dir, "j", 3, 4, 10);
  auto l = list_trace_dir(dir);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ(l.value().world_size, 4);
  ASSERT_EQ(l.value().files.size(), 3u);
  ASSERT_EQ(l.value().missing_ranks, std::vector<int64_t>{2});
  fs::remove_all(dir);
}

TEST(TraceErrors, CorruptRankFileIsNamedAndTheRestListed) {
  const std::string dir = make_temp_dir("corrupt");
  write_trace(dir, "j", 0, 2, 10);
  std::ofstream(dir + "/" + trace_file_name("j", 1)) << "garbage";
  auto l = list_trace_dir(dir);
  ASSERT_TRUE(l.ok()) << l.message();
  ASSERT_EQ(l.value().files.size(), 1u);
  ASSERT_EQ(l.value().bad_files.size(), 1u);
  EXPECT_NE(l.value().bad_files[0].find("r000001"), std::string::npos);
  EXPECT_EQ(l.value().missing_ranks, std::vector<int64_t>{1});
  fs::remove_all(dir);
}

// Gives the first object of the file's global heap (where HDF5 1.10 keeps variable-length
// string attributes, unchecksummed) a length of 128 TiB: opening the file then crashes
// the library.
void damage_attribute_heap(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string gcol = "GCOL";
  const auto at = std::search(bytes.begin(), bytes.end(), gcol.begin(), gcol.end());
  ASSERT_NE(at, bytes.end()) << path << " has no global heap";
  // The collection's header (signature, version, 3 reserved, its size: 16 bytes), then
  // the object's index, reference count, 4 reserved and its size.
  const uint64_t huge = 0x7fffffffffffULL;
  f.seekp((at - bytes.begin()) + 16 + 8);
  f.write(reinterpret_cast<const char*>(&huge), sizeof huge);
  ASSERT_TRUE(f.good());
}

// One child opens the files in turn, as the listing then does: a file that crashes it
// is named, whether it is the first, one after others, or the one right after such a
// file, and every other file is used.
TEST(TraceErrors, FilesThatCrashHdf5AreNamedAndTheOthersListed) {
  const std::string dir = make_temp_dir("heap");
  for (int64_t r = 0; r < 6; ++r) {
    const std::string path = write_trace(dir, "j", r, 6, 10);
    if (r == 0 || r == 3 || r == 4) damage_attribute_heap(path);
  }
  auto l = list_trace_dir(dir);
  ASSERT_TRUE(l.ok()) << l.message();
  std::vector<int64_t> used;
  for (const auto& f : l.value().files) used.push_back(f.rank);
  EXPECT_EQ(used, (std::vector<int64_t>{1, 2, 5}));
  EXPECT_EQ(l.value().missing_ranks, (std::vector<int64_t>{0, 3, 4}));
  ASSERT_EQ(l.value().bad_files.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const std::string rank = std::string("r00000") + "034"[i];
    EXPECT_NE(l.value().bad_files[i].find(rank), std::string::npos) << l.value().bad_files[i];
    EXPECT_NE(l.value().bad_files[i].find("HDF5"), std::string::npos) << l.value().bad_files[i];
  }
  fs::remove_all(dir);
}

TEST(TraceErrors, MixedJobsAreRejected) {
  const std::string dir = make_temp_dir("mixed");
  write_trace(dir, "jobA", 0, 2, 10);
  write_trace(dir, "jobB", 1, 2, 10);
  auto l = list_trace_dir(dir);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.message().find("more than one job"), std::string::npos) << l.message();
  EXPECT_NE(l.message().find("jobA"), std::string::npos);
  EXPECT_NE(l.message().find("jobB"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
