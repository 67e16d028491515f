// Flag parsing: nccl-tests names and meanings; anything unknown or malformed
// is a UsageError (exit code 2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/options.h"
#include "core/errors.h"

namespace ringside::bench {
namespace {

std::optional<BenchOptions> parse(std::vector<std::string> args,
                                  const std::string& coll = "all_reduce") {
  std::vector<std::string> all = {"nccl_bench", coll};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  return parse_bench_options(coll, static_cast<int>(argv.size()), argv.data(), 2);
}

TEST(Options, DefaultsAreNcclTests) {
  auto o = parse({});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->min_bytes, 32u << 20);
  EXPECT_EQ(o->max_bytes, 32u << 20);
  EXPECT_EQ(o->iters, 20);
  EXPECT_EQ(o->warmup_iters, 1);
  EXPECT_EQ(o->check_iters, 1);
  EXPECT_EQ(o->average, 1);
  EXPECT_EQ(o->dtypes.at(0)->nccl, ncclFloat32);
  EXPECT_EQ(o->ops.at(0)->nccl, ncclSum);
}

TEST(Options, FlagsAreParsed) {
  auto o = parse(
      {"-b",     "8",      "-e",          "8G", "-f",          "2",   "-n",           "5",
       "-w",     "0",      "-c",          "3",  "-o",          "max", "-d",           "bfloat16",
       "-r",     "2",      "-g",          "2",  "-a",          "3",   "-z",           "1",
       "--json", "x.json", "--trace-dir", "t",  "--min-busbw", "1.5", "--rendezvous", "rv",
       "-t",     "3",      "-N",          "4",  "-I",          "1",   "-K",           "2",
       "-S",     "1",      "-p",          "1"},
      "reduce");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->min_bytes, 8u);
  EXPECT_EQ(o->max_bytes, 8ull << 30);
  EXPECT_EQ(o->step_factor, 2u);
  EXPECT_EQ(o->iters, 5);
  EXPECT_EQ(o->warmup_iters, 0);
  EXPECT_EQ(o->check_iters, 3);
  EXPECT_EQ(o->ops.at(0)->nccl, ncclMax);
  EXPECT_EQ(o->dtypes.at(0)->nccl, ncclBfloat16);
  EXPECT_EQ(o->root, 2);
  EXPECT_EQ(o->gpus_per_process, 2);
  EXPECT_EQ(o->threads, 3);
  EXPECT_EQ(o->world.gpus_per_process, 6);  // -t x -g local ranks
  EXPECT_EQ(o->average, 3);
  EXPECT_EQ(o->blocking, 1);
  EXPECT_EQ(o->json_file, "x.json");
  EXPECT_EQ(o->trace_dir, "t");
  EXPECT_DOUBLE_EQ(o->min_busbw.value(), 1.5);
  EXPECT_EQ(o->world.rendezvous.file, "rv");
  EXPECT_EQ(o->run_cycles, 4);
  EXPECT_TRUE(o->per_iter_timing);
  EXPECT_EQ(o->per_iter_skip, 2);
  EXPECT_TRUE(o->report_timestamps);
  EXPECT_TRUE(o->parallel_init);
  EXPECT_TRUE(o->world.parallel_init);
  EXPECT_EQ(o->world.threads, 3);
}

TEST(Options, LongNamesAndAll) {
  auto o = parse({"--minbytes", "1K", "--maxbytes", "4K", "--stepbytes", "1K", "--datatype", "all",
                  "--op", "all", "--root", "all", "--output_file", "y.json"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->dtypes.size(), 12u);  // with f8e4m3 and f8e5m2, as nccl-tests on NCCL 2.28
  EXPECT_EQ(o->ops.size(), 6u);      // with mulsum
  EXPECT_EQ(o->root, -1);
  EXPECT_EQ(o->json_file, "y.json");
  EXPECT_EQ(bench_sizes(*o), (std::vector<uint64_t>{1024, 2048, 3072, 4096}));
}

TEST(Options, SizeSequence) {
  auto o = parse({"-b", "8", "-e", "256M", "-f", "2"});
  ASSERT_TRUE(o);
  const auto s = bench_sizes(*o);
  ASSERT_EQ(s.size(), 26u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 256u << 20);
}

TEST(Options, BadInputIsAUsageError) {
  const std::vector<std::vector<std::string>> bad = {
      {"--bogus"},
      {"-x", "1"},
      {"-n", "abc"},
      {"-n", "0"},
      {"-n", "5x"},
      {"-b", "8X"},
      {"-b", "-1"},
      {"-b", "1G", "-e", "1M"},
      {"-d", "bogus"},
      {"-o", "bogus"},
      {"-F", "1"},
      {"-u", "4"},
      {"-N", "-1"},
      {"-I", "2"},
      {"-S", "2"},
      {"-p", "2"},
      {"-K", "1"},
      {"-I", "1", "-K", "20"},
      {"-I", "1", "-G", "1"},
      {"-t", "0"},
      {"-t", "65"},
      {"-t", "16", "-g", "8"},
      {"-a", "4"},
      {"-z", "5"},
      {"-c", "-1"},
      {"-G", "1", "-z", "3"},
      {"--min-busbw", "fast"},
      {"--launcher", "x"},
      {"-f", "2", "-b", "0"},
      {"-f", "0"},
      {"-T", "-1"},
      {"-T", "soon"},
      {"-T", "30x"},
      {"-T", "8d"},
      {"-n"},
      {"extra_positional"},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_THROW(parse(args), UsageError) << joined;
  }
  EXPECT_THROW(parse({}, "allreduce"), UsageError);
}

// nccl-tests reads -f 1 as "no factor"; the documented rule is an integer >= 2,
// and the message says how to step by a fixed increment instead.
TEST(Options, StepFactorBelowTwoIsRejected) {
  for (const char* f : {"1", "0"}) {
    try {
      parse({"-b", "8", "-e", "1M", "-f", f});
      ADD_FAILURE() << "-f " << f << " was accepted";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(std::string("-f ") + f), std::string::npos) << m;
      EXPECT_NE(m.find("at least 2"), std::string::npos) << m;
      EXPECT_NE(m.find("-i"), std::string::npos) << m;
    }
  }
  auto o = parse({"-b", "8", "-e", "32", "-f", "2"});
  ASSERT_TRUE(o);
  EXPECT_EQ(bench_sizes(*o), (std::vector<uint64_t>{8, 16, 32}));
}

// -i applies without -f (as documented and in nccl-tests); the sequence never
// passes -e, even where the next size would overflow.
TEST(Options, StepBytesAndLimits) {
  auto o = parse({"-b", "1K", "-e", "4K", "-i", "1500"});
  ASSERT_TRUE(o);
  EXPECT_EQ(bench_sizes(*o), (std::vector<uint64_t>{1024, 2524, 4024}));
  o = parse({"-b", "8", "-e", "8", "-i", "0"});
  ASSERT_TRUE(o);
  EXPECT_EQ(bench_sizes(*o), (std::vector<uint64_t>{8}));
  EXPECT_THROW(parse({"-b", "8", "-e", "16", "-i", "0"}), UsageError);
  BenchOptions big;
  big.min_bytes = (1ull << 62) + 1;
  big.max_bytes = ~0ull;
  big.step_factor = 5;
  EXPECT_EQ(bench_sizes(big).size(), 1u);
  big.step_factor = 1;
  big.step_bytes = 1ull << 63;
  EXPECT_EQ(bench_sizes(big).size(), 2u);
}

TEST(Options, Timeout) {
  auto o = parse({});
  ASSERT_TRUE(o);
  EXPECT_DOUBLE_EQ(o->world.timeout_seconds, 600);
  o = parse({"-T", "30"});
  ASSERT_TRUE(o);
  EXPECT_DOUBLE_EQ(o->world.timeout_seconds, 30);
  o = parse({"--timeout", "2m"});
  ASSERT_TRUE(o);
  EXPECT_DOUBLE_EQ(o->world.timeout_seconds, 120);
  o = parse({"-T", "0"});
  ASSERT_TRUE(o);
  EXPECT_DOUBLE_EQ(o->world.timeout_seconds, 0);
}

TEST(Options, HelpIsNotAnError) {
  testing::internal::CaptureStdout();
  auto o = parse({"--help"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_FALSE(o);
  EXPECT_NE(out.find("--minbytes"), std::string::npos);
  // Every option says what it takes: a size, a count, seconds, a file...
  EXPECT_EQ(out.find(" TEXT"), std::string::npos) << out;
  for (const char* taken : {"-b,--minbytes BYTES", "-n,--iters INT", "-T,--timeout SECONDS"})
    EXPECT_NE(out.find(taken), std::string::npos) << taken << " in " << out;
}

std::string usage_error(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Options, ABadSizeIsNamedOnce) {
  EXPECT_EQ(usage_error({"-b", "8Q"}),
            "--minbytes: '8Q' has an unknown size unit 'Q' (use K, M, G or T); run 'nccl_bench "
            "all_reduce --help'");
}

// CLI11 lists unexpected arguments last first when given a vector; ours keep the
// command line's order.
TEST(Options, UnexpectedArgumentsInTheirOrder) {
  EXPECT_EQ(usage_error({"10", "-X"}),
            "unexpected arguments: 10 -X; run 'nccl_bench all_reduce --help' for the flags");
  EXPECT_EQ(usage_error({"one"}),
            "unexpected argument: one; run 'nccl_bench all_reduce --help' for the flags");
}

TEST(Options, NumbersNameTheFlagAndTheRange) {
  EXPECT_EQ(usage_error({"-n", "5x"}),
            "--iters: '5x' is not a whole number; give a whole number from 1 to 2147483647; run "
            "'nccl_bench all_reduce --help'");
  EXPECT_EQ(usage_error({"-I", "2"}),
            "--per_iter_timing: 2 is out of range; give a whole number from 0 to 1; run "
            "'nccl_bench all_reduce --help'");
  const std::string t = usage_error({"-T", "soon"});
  EXPECT_EQ(t.rfind("--timeout: 'soon'", 0), 0u) << t;
}

// nccl-tests flags nccl_bench does not take are refused by name, with the reason.
TEST(Options, UnsupportedNcclTestsFlagsSayWhy) {
  EXPECT_NE(usage_error({"-F", "1"}).find("-F is not an nccl-tests flag"), std::string::npos);
  EXPECT_NE(usage_error({"-u", "1"}).find("-u (--unalign) is not implemented"), std::string::npos);
}

TEST(Options, HelpShowsTypesAndDefaults) {
  testing::internal::CaptureStdout();
  parse({"--help"});
  const std::string out = testing::internal::GetCapturedStdout();
  for (const char* shown : {"-n,--iters INT=20", "-b,--minbytes BYTES=32M",
                            "-T,--timeout SECONDS=600", "-N,--run_cycles INT=1", "-o,--op OP=sum"})
    EXPECT_NE(out.find(shown), std::string::npos) << shown << " in " << out;
}

}  // namespace
}  // namespace ringside::bench
