// A writer SIGKILLed after a flush leaves a file readable up to that flush,
// without h5clear; a live writer's file can be read while it writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

TEST(TraceKill, SigkilledWriterIsReadableUpToLastFlush) {
  const std::string dir = testing::make_temp_dir("kill");
  const std::string path = dir + "/" + trace_file_name("k", 0);
  constexpr uint64_t kFlushed = 12'345;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    WriterOptions opts;
    opts.chunk_records = 1000;
    auto w = TraceWriter::create(path, testing::sample_meta("k", 0, 1), opts);
    if (!w.ok()) _exit(3);
    std::vector<OpRecord> ops;
    for (uint64_t i = 0; i < kFlushed; ++i) ops.push_back(testing::make_op(i));
    OpRecord stuck = testing::make_op(kFlushed);
    stuck.status = static_cast<uint8_t>(OpStatus::kHostPending);
    if (!w.value()->append(ops).ok() || !w.value()->flush(std::span(&stuck, 1), {}).ok()) _exit(4);
    // More data after the flush: some reaches the file as whole chunks, the
    // rest is only in memory. Neither may damage what was flushed.
    std::vector<OpRecord> more;
    for (uint64_t i = kFlushed; i < kFlushed + 2500; ++i) more.push_back(testing::make_op(i));
    if (!w.value()->append(more).ok()) _exit(5);
    char c = 'x';
    if (write(ready[1], &c, 1) != 1) _exit(6);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "child failed before signalling";
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_GE(r.value()->op_count(), kFlushed);
  uint64_t i = 0;
  ASSERT_TRUE(r.value()
                  ->for_each_op_batch(4096,
                                      [&](std::span<const OpRecord> batch) {
                                        for (const OpRecord& op : batch) {
                                          EXPECT_EQ(op.seq, i);
                                          EXPECT_EQ(op.t_enter_ns, testing::make_op(i).t_enter_ns);
                                          ++i;
                                        }
                                        return true;
                                      })
                  .ok());
  EXPECT_GE(i, kFlushed);
  auto pending = r.value()->last_pending();
  ASSERT_TRUE(pending.ok()) << pending.message();
  ASSERT_EQ(pending.value().size(), 1u);
  EXPECT_EQ(pending.value()[0].seq, kFlushed);
  EXPECT_EQ(pending.value()[0].status, static_cast<uint8_t>(OpStatus::kHostPending));
  std::filesystem::remove_all(dir);
}

// A kill can land inside a flush (Slurm may send SIGKILL a few ms after the
// SIGTERM that started the final one).  Whatever the moment, the reader must
// return one whole /pending snapshot, never none or a mix of two.
TEST(TraceKill, KillDuringFlushesLeavesOneWholePendingSnapshot) {
  constexpr int kRounds = 12;
  constexpr uint64_t kPending = 3;
  const std::string dir = testing::make_temp_dir("killflush");
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir + "/" + trace_file_name("kf", round);
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(ready[0]);
      auto w = TraceWriter::create(path, testing::sample_meta("kf", round, kRounds));
      if (!w.ok()) _exit(3);
      bool told = false;
      for (uint64_t f = 1;; ++f) {
        // Flush f: ops f*10 .. f*10+2 outstanding, plus one completed op.
        std::vector<OpRecord> pending;
        for (uint64_t k = 0; k < kPending; ++k) pending.push_back(testing::make_op(f * 10 + k));
        OpRecord done = testing::make_op(f);
        if (!w.value()->append(std::span(&done, 1)).ok()) _exit(4);
        if (!w.value()->flush(pending, {}).ok()) _exit(5);
        if (!told) {
          char c = 'x';
          if (write(ready[1], &c, 1) != 1) _exit(6);
          told = true;
        }
      }
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1) << "child failed before its first flush";
    close(ready[0]);
    usleep(static_cast<useconds_t>(1000 + round * 1700));  // a different moment each round
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));

    auto r = TraceReader::open(path);
    ASSERT_TRUE(r.ok()) << "round " << round << ": " << r.message();
    auto pending = r.value()->last_pending();
    ASSERT_TRUE(pending.ok()) << "round " << round << ": " << pending.message();
    ASSERT_EQ(pending.value().size(), kPending) << "round " << round;
    const uint64_t flush = pending.value()[0].seq / 10;
    EXPECT_GE(flush, 1u) << "round " << round;
    for (uint64_t k = 0; k < kPending; ++k) {
      EXPECT_EQ(pending.value()[k].seq, flush * 10 + k) << "round " << round << " row " << k;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(TraceKill, LiveFileCanBeReadWhileWriterAppends) {
  const std::string dir = testing::make_temp_dir("live");
  const std::string path = dir + "/" + trace_file_name("l", 0);
  auto w = TraceWriter::create(path, testing::sample_meta("l", 0, 1));
  ASSERT_TRUE(w.ok()) << w.message();
  std::vector<OpRecord> ops;
  for (uint64_t i = 0; i < 100; ++i) ops.push_back(testing::make_op(i));
  ASSERT_TRUE(w.value()->append(ops).ok());
  ASSERT_TRUE(w.value()->flush({}, {}).ok());
  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r.value()->op_count(), 100u);
  ASSERT_TRUE(w.value()->append(ops).ok());
  ASSERT_TRUE(w.value()->flush({}, {}).ok());
  EXPECT_EQ(r.value()->op_count(), 200u);  // refreshed under SWMR
  ASSERT_TRUE(w.value()->close().ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
