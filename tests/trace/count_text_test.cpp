// count_text(): "1 rank", not "1 ranks".
#include <gtest/gtest.h>

#include "ringside/count_text.h"

namespace ringside {
namespace {

TEST(CountText, OneIsSingularEverythingElsePlural) {
  EXPECT_EQ(count_text(1, "rank"), "1 rank");
  EXPECT_EQ(count_text(0, "rank"), "0 ranks");
  EXPECT_EQ(count_text(8, "node"), "8 nodes");
  EXPECT_EQ(count_text(-1, "GPU"), "-1 GPUs");
}

}  // namespace
}  // namespace ringside
