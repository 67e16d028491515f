// /progress: the writer's per-communicator account, one row per communicator that
// moved at each flush, read back by name; files without the table read as empty.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_validate.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

using testing::make_temp_dir;

constexpr uint64_t kWorld = 0x1111, kTp = 0x2222;

OpRecord op(uint64_t comm, uint64_t seq, OpStatus status = OpStatus::kComplete) {
  OpRecord r = testing::make_op(seq);
  r.comm_id = comm;
  r.seq = seq;
  r.t_enter_ns = 1000 * static_cast<int64_t>(seq + 1);
  r.t_exit_ns = r.t_enter_ns + 10;
  r.t_dev_start_ns = r.t_enter_ns + 20;
  r.t_dev_end_ns = r.t_enter_ns + 500;
  r.status = static_cast<uint8_t>(status);
  return r;
}

std::vector<ProgressRecord> progress_of(const std::string& path, uint64_t from = 0) {
  auto r = TraceReader::open(path);
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return {};
  EXPECT_TRUE(r.value()->has_progress());
  auto rows = r.value()->progress(from);
  EXPECT_TRUE(rows.ok()) << rows.message();
  return rows.ok() ? rows.value() : std::vector<ProgressRecord>{};
}

TEST(TraceProgress, EachFlushWritesTheCommunicatorsThatMoved) {
  const std::string dir = make_temp_dir("progress");
  const std::string path = dir + "/" + trace_file_name("p", 0);
  auto w = TraceWriter::create(path, testing::sample_meta("p", 0, 2));
  ASSERT_TRUE(w.ok()) << w.message();
  // Flush 1: world completed 0..2, tp completed 0; world's seq 3 is still on the device.
  std::vector<OpRecord> rows = {op(kWorld, 0), op(kWorld, 1), op(kTp, 0), op(kWorld, 2)};
  ASSERT_TRUE(w.value()->append(std::span<const OpRecord>(rows)).ok());
  OpRecord stuck = op(kWorld, 3, OpStatus::kDevicePending);
  ASSERT_TRUE(w.value()->flush(std::span(&stuck, 1), {}).ok());
  auto first = progress_of(path);
  ASSERT_EQ(first.size(), 2u);
  const ProgressRecord& world = first[0].comm_id == kWorld ? first[0] : first[1];
  const ProgressRecord& tp = first[0].comm_id == kWorld ? first[1] : first[0];
  EXPECT_EQ(world.flush_index, 1u);
  EXPECT_EQ(world.entered_seq, 3);
  EXPECT_EQ(world.completed_seq, 2);
  EXPECT_EQ(world.t_entered_ns, stuck.t_enter_ns);
  EXPECT_EQ(world.t_completed_ns, rows[3].t_dev_end_ns);
  EXPECT_EQ(world.op_rows, 3u);
  EXPECT_EQ(world.pending_ops, 1u);
  EXPECT_EQ(world.state, static_cast<uint8_t>(OpStatus::kDevicePending));
  EXPECT_EQ(tp.entered_seq, 0);
  EXPECT_EQ(tp.completed_seq, 0);
  EXPECT_EQ(tp.state, 0);
  EXPECT_TRUE(validate_progress(world).ok());

  // Flush 2: nothing moved (the same op still outstanding): no row.
  ASSERT_TRUE(w.value()->flush(std::span(&stuck, 1), {}).ok());
  EXPECT_EQ(progress_of(path).size(), 2u);

  // Flush 3: tp moved, world's op finished: one row each, read from where the
  // last read ended.
  std::vector<OpRecord> more = {op(kTp, 1), op(kWorld, 3)};
  ASSERT_TRUE(w.value()->append(std::span<const OpRecord>(more)).ok());
  ASSERT_TRUE(w.value()->flush({}, {}).ok());
  auto third = progress_of(path, 2);
  ASSERT_EQ(third.size(), 2u);
  for (const ProgressRecord& p : third) {
    EXPECT_EQ(p.flush_index, 3u);
    EXPECT_EQ(p.state, 0);
    EXPECT_EQ(p.pending_ops, 0u);
    EXPECT_EQ(p.entered_seq, p.completed_seq);
  }
  ASSERT_TRUE(w.value()->close().ok());
  std::filesystem::remove_all(dir);
}

TEST(TraceProgress, AFileWithoutTheTableReadsAsNoProgress) {
  // Files written before /progress existed.
  const std::string dir = make_temp_dir("noprogress");
  const std::string path = dir + "/t.h5";
  {
    auto w = TraceWriter::create(path, testing::sample_meta("j", 0, 1));
    ASSERT_TRUE(w.ok()) << w.message();
    OpRecord r = op(kWorld, 0);
    ASSERT_TRUE(w.value()->append(std::span(&r, 1)).ok());
    ASSERT_TRUE(w.value()->flush({}, {}).ok());
    ASSERT_TRUE(w.value()->close().ok());
  }
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    EXPECT_GE(H5Ldelete(f, kProgressDataset, H5P_DEFAULT), 0);
    H5Fclose(f);
  }
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(r.value()->has_progress());
  auto rows = r.value()->progress();
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows.value().empty());
  EXPECT_EQ(r.value()->op_count(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(TraceProgress, OutOfRangeRowsAreRejected) {
  ProgressRecord p{};
  p.entered_seq = p.completed_seq = -1;
  EXPECT_TRUE(validate_progress(p).ok());
  p.state = 3;
  EXPECT_FALSE(validate_progress(p).ok());
  p.state = 0;
  p.entered_seq = -2;
  EXPECT_FALSE(validate_progress(p).ok());
  p.entered_seq = 0;
  p.t_completed_ns = INT64_MAX;
  EXPECT_FALSE(validate_progress(p).ok());
}

}  // namespace
}  // namespace ringside::trace
