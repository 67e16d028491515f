// printable() and shell_quote(): what trace text may become on a terminal and in a command.
#include <gtest/gtest.h>

#include "ringside/safe_text.h"

namespace ringside {
namespace {

TEST(SafeText, ControlCharactersAndBrokenUtf8BecomeQuestionMarks) {
  EXPECT_EQ(printable("node1"), "node1");
  EXPECT_EQ(printable("a\x1b[2Jb\x07\x7f"), "a?[2Jb??");
  EXPECT_EQ(printable("line\nnext"), "line?next");
  EXPECT_EQ(printable("line\nnext", true), "line\nnext");
  EXPECT_EQ(printable("gr\xc3\xbc\xc3\x9f"), "gr\xc3\xbc\xc3\x9f");  // valid UTF-8 stays
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "??31m");  // C1 CSI
  EXPECT_EQ(printable("\xff\xc3(\xe2\x82"),
            "?"
            "?("
            "??");                              // invalid, truncated
  EXPECT_EQ(printable("\xc0\xaf"), "??");       // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "???");  // surrogate
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a?b");
}

TEST(SafeText, ShellQuotingGivesOneWordBack) {
  EXPECT_EQ(shell_quote("node-2.cluster:1"), "node-2.cluster:1");
  EXPECT_EQ(shell_quote("node2;touch${IFS}x"), "'node2;touch${IFS}x'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b\x1b"), "'a b?'");
  EXPECT_EQ(shell_quote("$(id)`id`"), "'$(id)`id`'");
}

}  // namespace
}  // namespace ringside
