// nccl_bench as nccl-tests' drop-in: run under nccl-tests' program names, its
// output has nccl-tests' layout line for line.  data/nccl_tests/ holds output of
// NVIDIA nccl-tests 2.19.6 (NCCL 2.28) captured on the sim, 2 ranks; the same
// command lines run here through the links to nccl_bench, and both outputs are
// read by one parser.
#include <gtest/gtest.h>

#include <filesystem>

#include "nccl_tests_layout.h"
#include "process_util.h"

namespace ringside::bench::testing {
namespace {

struct Case {
  const char* file;     // data/nccl_tests/<file>.out
  const char* program;  // nccl-tests' program name
  const char* args;     // its command line (-c 0: nccl-tests checks data with kernels)
};

const Case kCases[] = {
    {"all_reduce_all", "all_reduce_perf", "-b 1K -e 1K -d all -o all -c 0 -n 2 -w 0"},
    {"sendrecv_ops", "sendrecv_perf", "-b 1K -e 2K -f 2 -o all -c 0 -n 2 -w 0"},
    {"all_gather", "all_gather_perf", "-b 1K -e 4K -f 2 -c 0 -n 2 -w 0"},
    {"broadcast_root1", "broadcast_perf", "-b 1K -e 2K -f 2 -r 1 -c 0 -n 2 -w 0"},
    {"all_reduce_iter", "all_reduce_perf", "-b 1K -e 2K -f 2 -I 1 -S 1 -N 2 -c 0 -n 4 -w 0"},
    {"reduce_blocking", "reduce_perf", "-b 1K -e 1K -z 1 -p 1 -o max -c 0 -n 2 -w 0"},
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += "[" + x + "]";
  return s;
}

class DropIn : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    std::string why;
    if (!sim_available(&why)) GTEST_SKIP() << why;
  }
};

TEST_P(DropIn, LayoutIsNcclTests) {
  const Case& c = GetParam();
  const std::string data = read_file(std::string(TEST_DATA_DIR) + "/nccl_tests/" + c.file + ".out");
  ASSERT_FALSE(data.empty()) << c.file;
  const std::string program =
      (std::filesystem::path(NCCL_BENCH_BIN).parent_path() / c.program).string();
  const RunResult r = run_shell(sim_command_for(program, 2, 1, c.args));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  const Layout want = parse_layout(data);
  const Layout got = parse_layout(r.out);
  EXPECT_TRUE(want.problems.empty()) << join(want.problems);
  EXPECT_TRUE(got.problems.empty()) << join(got.problems) << "\n" << r.out;
  EXPECT_EQ(want.program, "nccl-tests");
  EXPECT_EQ(got.program, "nccl_bench");
  EXPECT_EQ(got.test_name, c.program);
  EXPECT_EQ(got.test_name, want.test_name);
  EXPECT_EQ(join(got.kinds), join(want.kinds)) << r.out;
  EXPECT_EQ(join(got.parameters), join(want.parameters));
  EXPECT_EQ(join(got.options), join(want.options));
  EXPECT_EQ(join(got.columns), join(want.columns));
  EXPECT_EQ(join(got.units), join(want.units));
  EXPECT_EQ(got.group_line, want.group_line);
  ASSERT_EQ(got.rows.size(), want.rows.size()) << r.out;
  for (size_t i = 0; i < want.rows.size(); ++i) {
    EXPECT_EQ(got.rows[i].type, want.rows[i].type) << "row " << i;
    EXPECT_EQ(got.rows[i].redop, want.rows[i].redop) << "row " << i;
    EXPECT_EQ(got.rows[i].root, want.rows[i].root) << "row " << i;
    EXPECT_EQ(got.rows[i].fields, want.rows[i].fields) << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(NcclTests, DropIn, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(p.param.file); });

// The parser itself: what it must refuse, so that a match above means something.
TEST(NcclTestsLayout, ParserSeesTheParts) {
  const Layout l =
      parse_layout(read_file(std::string(TEST_DATA_DIR) + "/nccl_tests/sendrecv_ops.out"));
  EXPECT_TRUE(l.problems.empty()) << join(l.problems);
  EXPECT_EQ(l.test_name, "sendrecv_perf");
  EXPECT_EQ(join(l.parameters),
            "[nThread][nGpus][minBytes][maxBytes][step][warmup iters][iters][agg iters]"
            "[validation][graph][unalign]");
  ASSERT_EQ(l.rows.size(), 12u);
  EXPECT_EQ(l.rows[0].redop, "sum");
  EXPECT_EQ(l.rows[10].redop, "mulsum");  // ops outside, sizes inside
  EXPECT_EQ(l.rows[0].fields, 13u);
  EXPECT_EQ(join(l.kinds),
            "[version][starting][parameters][#][devices][rank][#][columns][units][row]"
            "[out_of_bounds][avg_busbw][#][concluded][#][]");
  EXPECT_FALSE(parse_layout("# what is this\n").problems.empty());
}

}  // namespace
}  // namespace ringside::bench::testing
