// The per-op table's storage (load/mapped_array.h): records survive every growth and a
// page-out, an array beyond a few pages lives in an unlinked file of the spill directory,
// one that cannot be made there leaves it in memory, and an analysis's table is the same
// record for record wherever it lives.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "clock/clock_align.h"
#include "load/mapped_array.h"
#include "match/group_table.h"
#include "ringside/trace_reader.h"
#include "synth/synth_writer.h"
#include "test_util.h"

namespace ringside::analysis {
namespace {

struct Record {
  int64_t value = -7;
  uint32_t index = 0;
  uint8_t flag = 3;
};

// Fills `a` one record at a time to `n`, each new record checked against its defaults.
void fill(MappedArray<Record>& a, size_t n) {
  for (size_t i = a.size(); i < n; ++i) {
    Record& r = a.emplace_back();
    ASSERT_EQ(r.value, -7);
    ASSERT_EQ(r.flag, 3);
    r.value = static_cast<int64_t>(i) * 3;
    r.index = static_cast<uint32_t>(i);
  }
}

void expect_filled(const MappedArray<Record>& a) {
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].value, static_cast<int64_t>(i) * 3) << i;
    ASSERT_EQ(a[i].index, i) << i;
  }
}

size_t entries(const std::string& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                           std::filesystem::directory_iterator()));
}

TEST(MappedArray, GrowsInMemoryKeepingItsRecords) {
  MappedArray<Record> a;
  fill(a, 200'000);
  EXPECT_FALSE(a.in_file());
  expect_filled(a);
  a.resize(10);  // shrinking keeps the first records
  expect_filled(a);
  a.resize(20);  // and growing again initializes the new ones
  EXPECT_EQ(a[15].value, -7);
  a.clear();
  EXPECT_TRUE(a.empty());
}

TEST(MappedArray, BeyondAFewPagesLivesInAnUnlinkedFileOfTheSpillDirectory) {
  test::TempDir dir("mapped_array");
  MappedArray<Record> a;
  a.spill_to(dir.path());
  fill(a, 100);  // 1.6 KB: memory
  EXPECT_FALSE(a.in_file());
  fill(a, 200'000);  // 3.2 MB: a file, grown several times
  EXPECT_TRUE(a.in_file());
  EXPECT_EQ(entries(dir.path()), 0u);  // unlinked when made
  expect_filled(a);
  a.page_out();  // written out and dropped; read back when touched
  expect_filled(a);
  a[5].value = 11;
  a.page_out();
  EXPECT_EQ(a[5].value, 11);
  a.clear();
  EXPECT_FALSE(a.in_file());
}

TEST(MappedArray, ADirectoryWhereNoFileCanBeMadeLeavesItInMemory) {
  MappedArray<Record> a;
  a.spill_to("/nonexistent-ringside-dir");
  fill(a, 200'000);
  EXPECT_FALSE(a.in_file());
  expect_filled(a);
}

// Every rank's ops matched into a table in memory and into one in files (paged out as
// the pass goes past each communicator's last member): the same records.
TEST(MappedArray, APerOpTableInFilesIsTheOneInMemory) {
  test::TempDir dir("mapped_table");
  test::TempDir spill("mapped_table_spill");
  auto spec = test::small_spec(dir.path());
  spec.ranks = 8;
  spec.nodes = 2;
  spec.tp = 2;
  spec.steps = 400;  // a few hundred ops per communicator: tables of several pages
  ASSERT_TRUE(synth::write_synth_traces(spec).ok());
  Progress quiet(false);
  auto loaded = load_trace_set(dir.path(), LoadOptions{}, quiet);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  TraceSet& set = loaded.value();
  align_clocks(set);
  GroupTable in_memory(set);
  GroupTable in_files(set, spill.path());
  std::vector<int64_t> share;
  for (const auto& ri : set.ranks) share.push_back(ri.rank);
  in_files.plan_page_out(share);
  for (const auto& ri : set.ranks) {
    auto r = trace::TraceReader::open(ri.path);
    ASSERT_TRUE(r.ok());
    auto rows = read_op_rows(*r.value(), ri.first_row, ri.op_count);
    ASSERT_TRUE(rows.ok());
    ASSERT_TRUE(in_memory.add_rank(ri, rows.value()).ok());
    ASSERT_TRUE(in_files.add_rank(ri, rows.value()).ok());
    in_files.passed(ri.rank);
  }
  in_memory.finalize();
  in_files.finalize();
  size_t filed = 0, groups = 0;
  for (size_t ci = 0; ci < set.comms.size(); ++ci) {
    const auto& a = in_memory.comms()[ci].groups;
    const auto& b = in_files.comms()[ci].groups;
    EXPECT_FALSE(a.in_file());
    filed += b.in_file();
    ASSERT_EQ(a.size(), b.size()) << ci;
    groups += a.size();
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(GroupAgg)), 0) << ci;
  }
  EXPECT_GT(groups, 1000u);
  EXPECT_GT(filed, 0u);
}

}  // namespace
}  // namespace ringside::analysis
