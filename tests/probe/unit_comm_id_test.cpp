// Communicator ids: equal for equal inputs (what every member computes),
// different for anything that distinguishes communicators.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "comm_id.h"

namespace ringside::probe {
namespace {

TEST(CommId, UniqueIdHashIsStableAndSensitive) {
  unsigned char a[128];
  unsigned char b[128];
  for (int i = 0; i < 128; ++i) a[i] = b[i] = static_cast<unsigned char>(i * 7);
  EXPECT_EQ(comm_id_from_unique_id(a, sizeof a, 0), comm_id_from_unique_id(b, sizeof b, 0));
  b[127] ^= 1;
  EXPECT_NE(comm_id_from_unique_id(a, sizeof a, 0), comm_id_from_unique_id(b, sizeof b, 0));
  // NCCL_COMM_ID gives every init the same id bytes: the use index separates them.
  EXPECT_NE(comm_id_from_unique_id(a, sizeof a, 0), comm_id_from_unique_id(a, sizeof a, 1));
  EXPECT_NE(comm_id_from_unique_id(a, sizeof a, 0), 0u);
}

TEST(CommId, SplitsDependOnParentColourAndOrdinal) {
  const uint64_t parent = 0x1234;
  std::set<uint64_t> ids;
  for (int color = 0; color < 4; ++color) {
    for (uint32_t ordinal = 0; ordinal < 4; ++ordinal)
      ids.insert(comm_id_for_split(parent, color, ordinal));
  }
  EXPECT_EQ(ids.size(), 16u);
  EXPECT_EQ(comm_id_for_split(parent, 1, 2), comm_id_for_split(parent, 1, 2));
  EXPECT_NE(comm_id_for_split(parent, 1, 2), comm_id_for_split(parent + 1, 1, 2));
}

TEST(CommId, ShrinkIgnoresExcludeListOrder) {
  const std::vector<int> x{5, 1, 3};
  const std::vector<int> y{3, 5, 1};
  const std::vector<int> z{3, 5};
  EXPECT_EQ(comm_id_for_shrink(9, 0, x), comm_id_for_shrink(9, 0, y));
  EXPECT_NE(comm_id_for_shrink(9, 0, x), comm_id_for_shrink(9, 0, z));
  EXPECT_NE(comm_id_for_shrink(9, 0, x), comm_id_for_shrink(9, 1, x));
  EXPECT_NE(comm_id_for_shrink(9, 0, {}), comm_id_for_split(9, -1, 0)) << "origins are kept apart";
}

TEST(CommId, ScalableAndInitAll) {
  unsigned char ids[3][128] = {};
  ids[1][0] = 1;
  EXPECT_EQ(comm_id_from_unique_ids(ids, 128, 3, 0), comm_id_from_unique_ids(ids, 128, 3, 0));
  EXPECT_NE(comm_id_from_unique_ids(ids, 128, 3, 0), comm_id_from_unique_ids(ids, 128, 2, 0));
  EXPECT_NE(comm_id_for_init_all("a", 1, 0), comm_id_for_init_all("a", 2, 0));
  EXPECT_NE(comm_id_for_init_all("a", 1, 0), comm_id_for_init_all("b", 1, 0));
}

}  // namespace
}  // namespace ringside::probe
