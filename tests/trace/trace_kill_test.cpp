// A writer SIGKILLed after a flush leaves a file readable up to that flush,
// without h5clear; a live writer's file can be read while it writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "ringside/trace_reader.h"
#include "ringside/trace_writer.h"
#include "trace_test_util.h"

namespace ringside::trace {
namespace {

// A writer process to kill: forks, runs `body` in the child (which calls its
// argument once the parent may kill it, then keeps writing or waits), and
// returns the child's pid once it has called it; -1 when the child failed first.
pid_t start_writer(const std::function<void(const std::function<void()>& ready)>& body) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    body([&] {
      const char c = 'x';
      if (write(fds[1], &c, 1) != 1) _exit(6);
    });
    _exit(0);
  }
  close(fds[1]);
  char c = 0;
  const bool ready = child > 0 && read(fds[0], &c, 1) == 1;
  close(fds[0]);
  if (child > 0 && !ready) waitpid(child, nullptr, 0);
  return ready ? child : -1;
}

// SIGKILLs the writer and reaps it; true when it died of that signal.
bool kill_writer(pid_t child) {
  int status = 0;
  return kill(child, SIGKILL) == 0 && waitpid(child, &status, 0) == child && WIFSIGNALED(status);
}

TEST(TraceKill, SigkilledWriterIsReadableUpToLastFlush) {
  const std::string dir = testing::make_temp_dir("kill");
  const std::string path = dir + "/" + trace_file_name("k", 0);
  constexpr uint64_t kFlushed = 12'345;
  const pid_t child = start_writer([&](const std::function<void()>& ready) {
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
    ready();
    pause();
  });
  ASSERT_GT(child, 0) << "child failed before signalling";
  ASSERT_TRUE(kill_writer(child));

  auto r = TraceReader::open(path);
  ASSERT_TRUE(r.ok()) << r.message();
  // Whole chunks of the later ops reached the file; the flush did not announce them.
  EXPECT_EQ(r.value()->op_count(), kFlushed);
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
  EXPECT_EQ(i, kFlushed);
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
  constexpr int kRounds = 40;
  constexpr uint64_t kPending = 3;
  const std::string dir = testing::make_temp_dir("killflush");
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir + "/" + trace_file_name("kf", round);
    const pid_t child = start_writer([&](const std::function<void()>& ready) {
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
          ready();
          told = true;
        }
      }
    });
    ASSERT_GT(child, 0) << "child failed before its first flush";
    usleep(static_cast<useconds_t>(500 + round * 650));  // a different moment each round
    ASSERT_TRUE(kill_writer(child));

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

// A reader holds one view of a live file, the newest flush complete when it was opened,
// until it syncs.
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
  EXPECT_EQ(r.value()->op_count(), 100u);
  EXPECT_EQ(r.value()->stats().value().size(), 1u);
  r.value()->sync();
  r.value()->sync();  // the first sync marks what it was opened with as current
  EXPECT_EQ(r.value()->op_count(), 200u);  // refreshed under SWMR
  EXPECT_EQ(r.value()->stats().value().size(), 2u);
  ASSERT_TRUE(w.value()->close().ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringside::trace
