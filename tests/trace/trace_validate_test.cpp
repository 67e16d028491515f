// Range checks of op records, comm rows and file attributes (docs/trace-format.md, "Validation").
#include <gtest/gtest.h>

#include <limits>

#include "ringside/trace_validate.h"

namespace ringside::trace {
namespace {

OpRecord good_op() {
  OpRecord op{};
  op.t_enter_ns = 1000;
  op.t_exit_ns = 2000;
  op.t_dev_start_ns = 1500;
  op.t_dev_end_ns = 2500;
  op.seq = 3;
  op.peer = -1;
  op.op = static_cast<uint8_t>(OpKind::kAllReduce);
  op.status = static_cast<uint8_t>(OpStatus::kComplete);
  return op;
}

TEST(TraceValidate, OpRecordsOutOfRangeAreNamed) {
  EXPECT_TRUE(validate_op(good_op()).ok());
  OpRecord op = good_op();
  op.op = 0;
  EXPECT_NE(validate_op(op).message().find("op = 0"), std::string::npos);
  op = good_op();
  op.status = 9;
  EXPECT_NE(validate_op(op).message().find("status"), std::string::npos);
  op = good_op();
  op.seq = uint64_t{1} << 30;
  EXPECT_FALSE(validate_op(op).ok());
  op = good_op();
  op.t_exit_ns = 500;  // before entry
  EXPECT_NE(validate_op(op).message().find("before"), std::string::npos);
  op = good_op();
  op.t_enter_ns = -2;
  EXPECT_FALSE(validate_op(op).ok());
  op = good_op();
  op.t_dev_end_ns = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(validate_op(op).ok());
  op = good_op();
  op.t_exit_ns = kUnknownTime;  // still inside the call: fine
  EXPECT_TRUE(validate_op(op).ok());
  op = good_op();
  op.count = kMaxOpSize;  // 1 PiB of bytes: the most taken as real
  op.bytes = kMaxOpSize;
  EXPECT_TRUE(validate_op(op).ok());
  op.count = 5'851'042'340'995'694'256ull;
  EXPECT_NE(validate_op(op).message().find("count = 5851042340995694256"), std::string::npos);
  op = good_op();
  op.bytes = kMaxOpSize + 1;
  EXPECT_NE(validate_op(op).message().find("bytes"), std::string::npos);
}

TEST(TraceValidate, PeerMustFitTheOperation) {
  OpRecord op = good_op();
  op.peer = 0;  // an all_reduce has no root
  EXPECT_NE(validate_op(op).message().find("unrooted"), std::string::npos);
  op.op = static_cast<uint8_t>(OpKind::kBroadcast);
  EXPECT_TRUE(validate_op(op).ok());
  op.op = static_cast<uint8_t>(OpKind::kSend);
  op.peer = 7;
  EXPECT_TRUE(validate_op(op).ok());
  op.peer = -5;
  EXPECT_FALSE(validate_op(op).ok());
}

TEST(TraceValidate, CommRowsAndAttributes) {
  CommRecord c{};
  c.nranks = 4;
  c.rank = 3;
  c.color = -1;
  c.t_ns = 10;
  EXPECT_TRUE(validate_comm(c, 8).ok());
  // Processes that drive several GPUs hold a rank per GPU: a communicator of 16 ranks in
  // a job of 8 processes is real, one of more than 64 ranks per process is not.
  c.nranks = 16;
  EXPECT_TRUE(validate_comm(c, 8).ok());
  c.nranks = 8 * kMaxCommRanksPerProcess + 1;
  EXPECT_FALSE(validate_comm(c, 8).ok());
  c.nranks = 4;
  c.rank = 4;
  EXPECT_FALSE(validate_comm(c, 8).ok());

  TraceMeta m;
  m.world_size = 8;
  m.rank = 2;
  m.local_rank = 2;
  m.gpu_device = 2;
  m.pid = 100;
  m.clock_realtime_ns = int64_t{1'790'000'000} * 1'000'000'000;
  m.clock_monotonic_ns = 5;
  m.job_id = "42";
  EXPECT_TRUE(validate_meta(m, "f.h5").ok());
  m.rank = -1;
  EXPECT_NE(validate_meta(m, "f.h5").message().find("rank = -1"), std::string::npos);
  m.rank = 2;
  m.world_size = int64_t{1} << 40;
  EXPECT_NE(validate_meta(m, "f.h5").message().find("f.h5"), std::string::npos);
}

}  // namespace
}  // namespace ringside::trace
