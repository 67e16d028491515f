#include <gtest/gtest.h>

#include <nccl.h>

#include "ringside/bandwidth.h"

namespace ringside {
namespace {

using trace::OpKind;

TEST(Bandwidth, FactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kSend, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bw_factor(OpKind::kAllReduce, 1), 0.0);
}

TEST(Bandwidth, AlgAndBusBandwidth) {
  // 1 GB all-reduce in 0.1 s on 8 ranks: 10 GB/s algbw, 17.5 GB/s busbw.
  Bandwidth bw = compute_bandwidth(OpKind::kAllReduce, 1'000'000'000, 0.1, 8);
  EXPECT_NEAR(bw.alg_gbps, 10.0, 1e-9);
  EXPECT_NEAR(bw.bus_gbps, 17.5, 1e-9);
  EXPECT_EQ(compute_bandwidth(OpKind::kAllReduce, 8, 0.0, 8).bus_gbps, 0.0);
}

TEST(Bandwidth, NcclTestsSizeFromCount) {
  EXPECT_EQ(nccl_tests_size(OpKind::kAllReduce, 1000, 4, 8), 4000u);
  EXPECT_EQ(nccl_tests_size(OpKind::kAllGather, 1000, 4, 8), 32000u);
  EXPECT_EQ(nccl_tests_size(OpKind::kReduceScatter, 1000, 2, 4), 8000u);
  EXPECT_EQ(nccl_tests_size(OpKind::kAllToAll, 10, 8, 4), 320u);
  EXPECT_EQ(nccl_tests_size(OpKind::kSend, 10, 8, 4), 80u);
}

TEST(Bandwidth, DatatypesMatchNcclHeader) {
  EXPECT_EQ(nccl_dtype_size(ncclInt8), 1);
  EXPECT_EQ(nccl_dtype_size(ncclUint32), 4);
  EXPECT_EQ(nccl_dtype_size(ncclInt64), 8);
  EXPECT_EQ(nccl_dtype_size(ncclFloat16), 2);
  EXPECT_EQ(nccl_dtype_size(ncclFloat32), 4);
  EXPECT_EQ(nccl_dtype_size(ncclFloat64), 8);
  EXPECT_EQ(nccl_dtype_size(ncclBfloat16), 2);
  EXPECT_EQ(nccl_dtype_size(ncclFloat8e5m2), 1);
  EXPECT_EQ(nccl_dtype_size(ncclNumTypes), 0);
  EXPECT_STREQ(nccl_dtype_name(ncclFloat64), "double");
  EXPECT_STREQ(nccl_redop_name(ncclSum), "sum");
  EXPECT_STREQ(nccl_redop_name(ncclAvg), "avg");
  EXPECT_STREQ(nccl_redop_name(255), "custom");
}

}  // namespace
}  // namespace ringside
