// Slurm job steps: every step of a job numbers its ranks from 0, so steps
// get their own file names and a directory that mixes them is never analyzed
// as one run.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

namespace fs = std::filesystem;
using testing::make_temp_dir;

std::string write_step_trace(const std::string& dir, const std::string& step, int64_t rank,
                             int64_t world) {
  TraceMeta meta = testing::sample_meta("812345", rank, world);
  meta.step_id = step;
  const std::string path = dir + "/" + trace_file_name(meta.job_id, rank, step);
  auto w = TraceWriter::create(path, meta);
  EXPECT_TRUE(w.ok()) << w.message();
  if (w.ok()) {
    EXPECT_TRUE(w.value()->close().ok());
  }
  return path;
}

TEST(TraceSteps, FileNameCarriesTheStepInSlurmNotation) {
  EXPECT_EQ(trace_file_name("812345", 17, "0"), "ringside-812345.0-r000017.h5");
  EXPECT_EQ(trace_file_name("812345", 17, "12"), "ringside-812345.12-r000017.h5");
  EXPECT_EQ(trace_file_name("812345", 17), "ringside-812345-r000017.h5");
  EXPECT_EQ(trace_file_name("1", 0, "../x"), "ringside-1..._x-r000000.h5")
      << "the step is one safe name component";
}

TEST(TraceSteps, StepIsAFileAttribute) {
  const std::string dir = make_temp_dir("stepattr");
  const std::string path = write_step_trace(dir, "3", 0, 1);
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->meta().step_id, "3");
  fs::remove_all(dir);
}

// Files written before the attribute existed open, with an unknown (empty) step.
TEST(TraceSteps, FileWithoutTheAttributeReadsAsUnknownStep) {
  const std::string dir = make_temp_dir("oldfile");
  const std::string path = write_step_trace(dir, "", 0, 1);
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Adelete(f, "step_id"), 0);
    H5Fclose(f);
  }
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->meta().step_id, "");
  auto l = list_trace_dir(dir);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ(l.value().files.size(), 1u);
  fs::remove_all(dir);
}

TEST(TraceSteps, MixedStepsAreRefusedNamingTheStepsAndHowToPickOne) {
  const std::string dir = make_temp_dir("mixedsteps");
  for (int64_t r = 0; r < 2; ++r) write_step_trace(dir, "0", r, 2);
  for (int64_t r = 0; r < 3; ++r) write_step_trace(dir, "1", r, 3);
  auto l = list_trace_dir(dir);
  ASSERT_FALSE(l.ok()) << "two steps were listed as one run";
  EXPECT_NE(l.message().find("step 0: 2 files"), std::string::npos) << l.message();
  EXPECT_NE(l.message().find("step 1: 3 files"), std::string::npos) << l.message();
  EXPECT_NE(l.message().find("--step"), std::string::npos) << l.message();
  fs::remove_all(dir);
}

TEST(TraceSteps, ChosenStepListsOnlyItsFiles) {
  const std::string dir = make_temp_dir("pickstep");
  for (int64_t r = 0; r < 2; ++r) write_step_trace(dir, "0", r, 2);
  for (int64_t r = 0; r < 3; ++r) write_step_trace(dir, "1", r, 3);
  write_step_trace(dir, "", 0, 4);
  auto l = list_trace_dir(dir, std::string("1"));
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ(l.value().step_id, "1");
  EXPECT_EQ(l.value().world_size, 3);
  ASSERT_EQ(l.value().files.size(), 3u);
  for (const auto& f : l.value().files)
    EXPECT_NE(f.path.find("812345.1-"), std::string::npos) << f.path;
  EXPECT_TRUE(l.value().bad_files.empty()) << "other steps are not duplicates";
  EXPECT_TRUE(l.value().missing_ranks.empty());

  auto none = list_trace_dir(dir, std::string(kNoStep));
  ASSERT_TRUE(none.ok()) << none.message();
  EXPECT_EQ(none.value().step_id, "");
  ASSERT_EQ(none.value().files.size(), 1u);
  EXPECT_EQ(none.value().world_size, 4);
  fs::remove_all(dir);
}

TEST(TraceSteps, AbsentOrEmptyChosenStepIsAnError) {
  const std::string dir = make_temp_dir("nostep");
  write_step_trace(dir, "0", 0, 1);
  auto l = list_trace_dir(dir, std::string("7"));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.message().find("no traces of step 7"), std::string::npos) << l.message();
  EXPECT_NE(l.message().find("step 0: 1 file)"), std::string::npos) << l.message();
  auto e = list_trace_dir(dir, std::string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("empty"), std::string::npos) << e.message();
  auto n = list_trace_dir(dir, std::string(kNoStep));
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.message().find("no traces without a step id"), std::string::npos) << n.message();
  fs::remove_all(dir);
}

// Only the probe writes step ids, and only numbers: anything else is a corrupt
// file of its own, not a step to choose, and never reaches a terminal raw.
TEST(TraceSteps, StepIdThatIsNotANumberMakesTheFileBad) {
  const std::string dir = make_temp_dir("badstep");
  for (int64_t r = 0; r < 2; ++r) write_step_trace(dir, "4", r, 3);
  const std::string bad = write_step_trace(dir, "4\x1b[2J", 2, 3);
  auto l = list_trace_dir(dir);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ(l.value().step_id, "4");
  EXPECT_EQ(l.value().files.size(), 2u);
  EXPECT_EQ(l.value().missing_ranks, std::vector<int64_t>{2});
  ASSERT_EQ(l.value().bad_files.size(), 1u);
  EXPECT_NE(l.value().bad_files[0].find(bad), std::string::npos) << l.value().bad_files[0];
  EXPECT_NE(l.value().bad_files[0].find("step_id '4?[2J' is not a step number"), std::string::npos)
      << l.value().bad_files[0];
  fs::remove_all(dir);
}

TEST(TraceSteps, OneStepNeedsNoChoice) {
  const std::string dir = make_temp_dir("onestep");
  for (int64_t r = 0; r < 2; ++r) write_step_trace(dir, "5", r, 2);
  auto l = list_trace_dir(dir);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ(l.value().step_id, "5");
  EXPECT_EQ(l.value().files.size(), 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
