// The lowest sequence numbers of a sliding window of rows (load/sliding_lowest.h) equal
// those of a scan of the window, row by row with WindowFirsts::note, whatever the order
// of the numbers, as the window slides by uneven steps.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "load/sliding_lowest.h"

namespace ringside::analysis {
namespace {

using trace::OpKind;
using trace::OpRecord;

// Rows of two collective communicators and one with send/recv to two peers, numbers
// mostly rising with a few rows out of order (a rank's rows are written as ops end).
std::vector<OpRecord> rows_for(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<OpRecord> rows(n);
  uint64_t seq[3] = {0, 0, 0};
  uint32_t peer_seq[2][2] = {{0, 0}, {0, 0}};
  for (OpRecord& op : rows) {
    const unsigned which = rng() % 4;
    if (which < 2) {
      op.op = static_cast<uint8_t>(OpKind::kAllReduce);
      op.comm_id = 100 + which;
      op.seq = seq[which]++;
      if (rng() % 8 == 0 && op.seq >= 3) op.seq -= 3;  // written late
    } else {
      const bool send = rng() % 2 == 0;
      op.op = static_cast<uint8_t>(send ? OpKind::kSend : OpKind::kRecv);
      op.comm_id = 200;
      op.peer = static_cast<int32_t>(rng() % 2) + 1;
      op.peer_seq = peer_seq[send][op.peer - 1]++;
      if (rng() % 8 == 0 && op.peer_seq >= 2) op.peer_seq -= 2;
    }
  }
  return rows;
}

void expect_same(const WindowFirsts& a, const WindowFirsts& b, const std::string& where) {
  EXPECT_EQ(a.seq, b.seq) << where;
  ASSERT_EQ(a.peer_seq.size(), b.peer_seq.size()) << where;
  for (const auto& [ch, s] : a.peer_seq) {
    auto it = b.peer_seq.find(ch);
    ASSERT_NE(it, b.peer_seq.end()) << where;
    EXPECT_EQ(it->second, s) << where;
  }
}

TEST(SlidingLowest, EqualsAScanOfTheWindowAsItSlides) {
  // Comm 200 has comm rank 0 here; comm 101 has none (its send/recv would not be noted,
  // and it has none: its collectives are).
  const std::unordered_map<uint64_t, int32_t> me_in{{100, 3}, {200, 0}};
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<OpRecord> rows = rows_for(seed, 3000);
    std::mt19937 rng(seed * 7919);
    SlidingLowest lowest;
    uint64_t first = 0, end = 0;
    while (end < rows.size()) {
      // The window grows by a few rows and its front follows at most 400 rows behind.
      const uint64_t next_end = std::min<uint64_t>(rows.size(), end + 1 + rng() % 40);
      lowest.append(end, std::span<const OpRecord>(rows).subspan(end, next_end - end));
      end = next_end;
      if (end - first > 400) {
        first = end - 400 + rng() % 50;
        lowest.drop_before(first);
      }
      WindowFirsts kept, scanned;
      lowest.note(me_in, kept);
      for (uint64_t r = first; r < end; ++r) {
        auto me = me_in.find(rows[r].comm_id);
        scanned.note(rows[r], me == me_in.end() ? -1 : me->second);
      }
      expect_same(kept, scanned,
                  "seed " + std::to_string(seed) + ", rows " + std::to_string(first) + ".." +
                      std::to_string(end));
      if (HasFailure()) return;
    }
  }
}

TEST(SlidingLowest, EmptyNotesNothing) {
  SlidingLowest lowest;
  WindowFirsts none;
  lowest.note({}, none);
  EXPECT_TRUE(none.seq.empty());
  const std::vector<OpRecord> rows = rows_for(3, 50);
  lowest.append(10, rows);
  lowest.drop_before(60);  // every row left
  lowest.note({{200, 0}}, none);
  EXPECT_TRUE(none.seq.empty());
  EXPECT_TRUE(none.peer_seq.empty());
}

}  // namespace
}  // namespace ringside::analysis
