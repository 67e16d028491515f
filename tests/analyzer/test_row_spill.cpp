// The rows the first pass of an analysis keeps for the later ones (load/row_spill.h):
// every field of every row comes back as it was, whatever it holds.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "load/row_spill.h"
#include "test_util.h"

namespace ringside::analysis {
namespace {

using trace::OpRecord;

bool same(const OpRecord& a, const OpRecord& b) {
  bool eq = true;
#define RINGSIDE_SAME_FIELD(type, name, unit, desc) eq = eq && a.name == b.name;
  RINGSIDE_OP_FIELDS(RINGSIDE_SAME_FIELD)
#undef RINGSIDE_SAME_FIELD
  return eq;
}

// Rows as a job writes them (times rising, a few communicators and streams, sequence
// numbers per communicator), with every field now and then anything at all: extremes,
// unknown times, a new communicator or stream.
std::vector<OpRecord> rows_like_a_job(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  auto any = [&]<typename T>(T) { return static_cast<T>(rng()); };
  std::vector<uint64_t> comms = {rng(), rng(), rng()};
  std::vector<uint64_t> seqs(comms.size(), 0);
  std::vector<OpRecord> rows(n);
  int64_t t = 1'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    OpRecord& r = rows[i];
    const size_t c = rng() % comms.size();
    t += static_cast<int64_t>(rng() % 5'000'000);
    r.t_enter_ns = t;
    r.t_exit_ns = t + static_cast<int64_t>(rng() % 20'000);
    r.t_dev_start_ns = t + static_cast<int64_t>(rng() % 50'000);
    r.t_dev_end_ns = r.t_dev_start_ns + static_cast<int64_t>(rng() % 3'000'000);
    r.comm_id = comms[c];
    r.seq = seqs[c]++;
    r.count = 1 << (rng() % 24);
    r.bytes = r.count * 4;
    r.stream = 0x7f00'0000'0000 + (rng() % 4) * 0x100;
    r.group_id = static_cast<uint32_t>(rng() % 3);
    r.peer = static_cast<int32_t>(rng() % 9) - 1;
    r.peer_seq = static_cast<uint32_t>(i / 2);
    r.op = static_cast<uint8_t>(rng() % 12);
    r.dtype = static_cast<uint8_t>(rng() % 10);
    r.redop = static_cast<uint8_t>(rng() % 5);
    r.flags = static_cast<uint8_t>(rng() % 16);
    r.status = static_cast<uint8_t>(rng() % 4);
    switch (rng() % 16) {
      case 0:
        r.t_exit_ns = trace::kUnknownTime;
        break;
      case 1:
        r.t_dev_start_ns = r.t_dev_end_ns = trace::kUnknownTime;
        break;
      case 2:
        r.t_dev_end_ns = trace::kUnknownTime;
        break;
      case 3:
        comms.push_back(rng());  // communicators past the few a rank usually has
        seqs.push_back(0);
        break;
      case 4:
        r.stream = any(uint64_t{});
        break;
      case 5:
#define RINGSIDE_ANY_FIELD(type, name, unit, desc) r.name = any(type{});
        RINGSIDE_OP_FIELDS(RINGSIDE_ANY_FIELD)
#undef RINGSIDE_ANY_FIELD
        break;
      case 6:
        r.t_enter_ns = INT64_MIN;
        r.t_dev_end_ns = INT64_MAX;
        r.seq = UINT64_MAX;
        r.peer = INT32_MIN;
        break;
      default:
        break;
    }
  }
  return rows;
}

TEST(RowSpill, EveryFieldOfEveryRowComesBackAsItWas) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const auto rows = rows_like_a_job(3000, seed);
    std::string encoded;
    encode_op_rows(rows, encoded);
    std::vector<OpRecord> back;
    ASSERT_TRUE(decode_op_rows(encoded, rows.size(), back)) << "seed " << seed;
    ASSERT_EQ(back.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      ASSERT_TRUE(same(rows[i], back[i])) << "seed " << seed << ", row " << i;
  }
}

TEST(RowSpill, RowsAreAboutAThirdOfTheirSizeInMemory) {
  // Rows as a job writes them, without the rows of anything at all.
  std::vector<OpRecord> rows;
  for (const OpRecord& r : rows_like_a_job(20000, 5)) {
    if (r.t_enter_ns > 0 && r.stream >> 40 == 0x7f) rows.push_back(r);
  }
  std::string encoded;
  encode_op_rows(rows, encoded);
  EXPECT_LT(encoded.size(), rows.size() * sizeof(OpRecord) / 3);
}

TEST(RowSpill, AShortOrLongEncodingIsRefused) {
  const auto rows = rows_like_a_job(200, 3);
  std::string encoded;
  encode_op_rows(rows, encoded);
  std::vector<OpRecord> back;
  EXPECT_FALSE(
      decode_op_rows(std::string_view(encoded).substr(0, encoded.size() - 1), rows.size(), back));
  EXPECT_FALSE(decode_op_rows(encoded + '\0', rows.size(), back));
  EXPECT_FALSE(decode_op_rows(encoded, rows.size() + 1, back));
  EXPECT_TRUE(decode_op_rows(encoded, rows.size(), back));
}

TEST(RowSpill, KeepsEachRanksRowsApart) {
  test::TempDir dir("row_spill");
  RowSpill spill(dir.path());
  ASSERT_TRUE(spill.usable());
  const auto a = rows_like_a_job(500, 11), b = rows_like_a_job(70, 12);
  ASSERT_TRUE(spill.keep(7, a));
  ASSERT_TRUE(spill.keep(2, b));
  ASSERT_TRUE(spill.keep(3, {}));
  std::vector<OpRecord> back;
  for (const auto& [rank, rows] : {std::pair{7, &a}, std::pair{2, &b}}) {
    ASSERT_TRUE(spill.rows(rank, back));
    ASSERT_EQ(back.size(), rows->size());
    for (size_t i = 0; i < back.size(); ++i) EXPECT_TRUE(same(back[i], (*rows)[i]));
  }
  EXPECT_TRUE(spill.rows(3, back));
  EXPECT_TRUE(back.empty());
  EXPECT_FALSE(spill.rows(0, back));   // never kept
  EXPECT_FALSE(spill.rows(99, back));  // past every rank kept
  EXPECT_FALSE(spill.rows(-1, back));
  // The file is unlinked as soon as it is made: nothing is left in the directory.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(RowSpill, WithoutItsDirectoryItKeepsNothing) {
  RowSpill spill("/nonexistent-ringside-dir");
  EXPECT_FALSE(spill.usable());
  EXPECT_FALSE(spill.keep(0, rows_like_a_job(10, 1)));
  std::vector<OpRecord> back;
  EXPECT_FALSE(spill.rows(0, back));
}

}  // namespace
}  // namespace ringside::analysis
