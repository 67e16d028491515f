// Host data model, collective sizes and table formatting, checked against
// nccl-tests' conventions independently of the code under test.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/collective.h"
#include "bench/host_data.h"
#include "bench/options.h"
#include "bench/report.h"
#include "ringside/bandwidth.h"

namespace ringside::bench {
namespace {

TEST(HostData, SmallIntegersRoundTripExactlyInEveryType) {
  for (const DataType& t : all_dtypes()) {
    for (double v : {0.0, 1.0, 2.0, 3.0, 63.0, 127.0}) {
      if (t.size == 1 && t.is_float && v > 8) continue;  // fp8: exact to 8 (e5m2), 16 (e4m3)
      EXPECT_EQ(as_type(t.nccl, v), v) << t.name << " " << v;
    }
  }
}

TEST(HostData, IntegersWrapAndFloatsRound) {
  EXPECT_EQ(as_type(ncclInt8, 200.0), -56.0);
  EXPECT_EQ(as_type(ncclUint8, 300.0), 44.0);
  EXPECT_EQ(as_type(ncclFloat16, 2049.0), 2048.0);  // 11-bit mantissa
  EXPECT_EQ(as_type(ncclBfloat16, 257.0), 256.0);   // 8-bit mantissa
  EXPECT_EQ(as_type(ncclFloat16, 0.5), 0.5);
  EXPECT_EQ(as_type(ncclFloat16, -1.5), -1.5);
}

TEST(HostData, ProductIsExactlyTwoForAnyRankCount) {
  for (int n = 1; n <= 9; ++n) {
    InputGen g{true, ncclProd, n, 3};
    for (size_t i = 0; i < 50; ++i) ASSERT_EQ(g.reduced(i), 2.0) << "n=" << n << " i=" << i;
  }
}

TEST(HostData, ReductionsMatchAHandComputation) {
  InputGen g{true, ncclSum, 3, 1};
  const double sum = g(0, 7) + g(1, 7) + g(2, 7);
  EXPECT_EQ(g.reduced(7), sum);
  InputGen mx{true, ncclMax, 3, 1};
  EXPECT_EQ(mx.reduced(5), std::max({mx(0, 5), mx(1, 5), mx(2, 5)}));
  InputGen avg{true, ncclAvg, 4, 0};
  EXPECT_DOUBLE_EQ(avg.reduced(2), (avg(0, 2) + avg(1, 2) + avg(2, 2) + avg(3, 2)) / 4);
}

TEST(HostData, MismatchesAreDetected) {
  const DataType& f = *find_dtype("float");
  EXPECT_TRUE(values_match(f, ncclSum, 6.0, 6.0));
  EXPECT_FALSE(values_match(f, ncclSum, 6.0, 7.0));
  EXPECT_TRUE(values_match(f, ncclAvg, 1.5000001, 1.5));
  EXPECT_FALSE(values_match(f, ncclAvg, 1.6, 1.5));
  const DataType& i = *find_dtype("int32");
  EXPECT_TRUE(values_match(i, ncclAvg, 1.0, 1.5));  // integer avg may truncate
  EXPECT_FALSE(values_match(i, ncclSum, 1.0, 2.0));
}

TEST(HostData, DatatypeAndOpNames) {
  EXPECT_EQ(find_dtype("float")->nccl, ncclFloat32);
  EXPECT_EQ(find_dtype("bf16")->nccl, ncclBfloat16);
  EXPECT_EQ(find_dtype("half")->size, 2);
  EXPECT_EQ(find_dtype("f8e4m3")->nccl, ncclFloat8e4m3);
  EXPECT_EQ(find_dtype("fp8_e5m2")->nccl, ncclFloat8e5m2);
  EXPECT_EQ(find_dtype("Float"), nullptr);
  EXPECT_EQ(find_redop("avg")->nccl, ncclAvg);
  EXPECT_EQ(find_redop("mulsum")->nccl, kPreMulSum);
  EXPECT_EQ(find_redop("premulsum"), nullptr);  // an alias of the -o flag only
}

// The 8-bit floats: e4m3 has 3 mantissa bits and saturates at 448, e5m2 has 2 and
// saturates at 57344; ties go to the even code.
TEST(HostData, EightBitFloats) {
  EXPECT_EQ(as_type(ncclFloat8e4m3, 16.0), 16.0);
  EXPECT_EQ(as_type(ncclFloat8e4m3, 17.0), 16.0);  // halfway between 16 and 18: even
  EXPECT_EQ(as_type(ncclFloat8e4m3, 19.0), 20.0);  // halfway between 18 and 20: even
  EXPECT_EQ(as_type(ncclFloat8e4m3, 1000.0), 448.0);
  EXPECT_EQ(as_type(ncclFloat8e4m3, -0.5), -0.5);
  EXPECT_EQ(as_type(ncclFloat8e4m3, 0.001953125), 0.001953125);  // smallest subnormal
  EXPECT_EQ(as_type(ncclFloat8e5m2, 9.0), 8.0);
  EXPECT_EQ(as_type(ncclFloat8e5m2, 7.0), 7.0);
  EXPECT_EQ(as_type(ncclFloat8e5m2, 1e6), 57344.0);
  InputGen g{true, ncclSum, 4, 0, true};
  for (size_t i = 0; i < 20; ++i) EXPECT_LE(g(1, i), 1.0);
}

// mulsum: rank r's input times 1 + r % 2.
TEST(HostData, PreMulSumScalesEachRank) {
  InputGen g{true, kPreMulSum, 3, 2};
  EXPECT_EQ(g.reduced(4), g(0, 4) + 2 * g(1, 4) + g(2, 4));
}

// nccl-tests: size column = max(send, recv) bytes; per-rank shares are rounded
// down to 16 bytes; algbw = size / time.
TEST(Collectives, CountsFollowNcclTests) {
  const size_t count = 1000;  // elements of 4 bytes, 3 ranks: share 333 -> 332
  EXPECT_EQ(kAllGather.counts(count, 4, 3).recv, 996u);
  EXPECT_EQ(kAllGather.counts(count, 4, 3).param, 332u);
  EXPECT_EQ(kReduceScatter.counts(count, 4, 3).send, 996u);
  EXPECT_EQ(kAllToAll.counts(count, 4, 3).param, 332u);
  EXPECT_EQ(kGather.counts(count, 8, 3).param, 332u);   // 8-byte elements: multiple of 2
  EXPECT_EQ(kScatter.counts(count, 1, 3).param, 320u);  // 1-byte: multiple of 16
  EXPECT_EQ(kAllReduce.counts(count, 4, 3).param, 1000u);
  EXPECT_EQ(kSendRecv.counts(count, 2, 3).param, 1000u);
}

TEST(Collectives, SizeColumnEqualsTheBandwidthSize) {
  for (const Collective* c : all_collectives()) {
    for (int n : {1, 2, 3, 8}) {
      for (size_t bytes : {size_t{8}, size_t{1000}, size_t{1} << 20}) {
        const Counts k = c->counts(bytes / 4, 4, n);
        EXPECT_EQ(std::max(k.send, k.recv) * 4, nccl_tests_size(c->kind, k.param, 4, n))
            << c->name << " n=" << n << " bytes=" << bytes;
      }
    }
  }
}

TEST(Collectives, BusBandwidthFactorsAreNcclTests) {
  // Independent statement of nccl-tests' factors (docs/bandwidth.md).
  const double n = 8;
  EXPECT_DOUBLE_EQ(bus_bw_factor(kAllReduce.kind, 8), 2 * (n - 1) / n);
  for (const Collective* c : {&kAllGather, &kReduceScatter, &kAllToAll, &kGather, &kScatter}) {
    EXPECT_DOUBLE_EQ(bus_bw_factor(c->kind, 8), (n - 1) / n) << c->name;
  }
  for (const Collective* c : {&kBroadcast, &kReduce, &kSendRecv}) {
    EXPECT_DOUBLE_EQ(bus_bw_factor(c->kind, 8), 1.0) << c->name;
  }
  const Bandwidth bw = compute_bandwidth(kAllReduce.kind, 1000000000, 0.5, 4);
  EXPECT_DOUBLE_EQ(bw.alg_gbps, 2.0);
  EXPECT_DOUBLE_EQ(bw.bus_gbps, 3.0);
}

TEST(Report, FloatFormattingLikeNcclTests) {
  EXPECT_EQ(format_float(12.345, 7), "  12.35");
  EXPECT_EQ(format_float(0.001, 6), "  0.00");
  EXPECT_EQ(format_float(123456.7, 6), "123457");
  EXPECT_EQ(format_float(12345678.9, 7), "1.2e+07");
}

}  // namespace
}  // namespace ringside::bench
