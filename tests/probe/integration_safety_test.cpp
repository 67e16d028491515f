// What jobs die of, and bad configuration: hangs (watchdog), Slurm-style
// SIGTERM then SIGKILL, SIGKILL alone, bad env values, an unwritable output
// directory, fork.  The job's own behaviour must not change.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "launcher.h"
#include "process_util.h"
#include "ringside/trace_writer.h"
#include "trace_helpers.h"

namespace ringside::probe::testing {
namespace {

using trace::EventKind;

std::vector<std::string> probe_env(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> env{Paths::sim_env(), "LD_PRELOAD=" + Paths::probe(),
                               "RINGSIDE_OUTPUT=" + dir, "RINGSIDE_JOB_ID=safety",
                               "RINGSIDE_FLUSH_INTERVAL=200ms"};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// One rank run directly (no launcher), so the test owns its pid.
std::vector<std::string> single_rank_env(const std::string& dir, int port) {
  auto env = probe_env(dir);
  env.insert(env.end(), {"RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0",
                         "NCCL_COMM_ID=127.0.0.1:" + std::to_string(port)});
  return env;
}

// Rank 3 stops before op 5 (an NCCL group of `per_group` all-reduces); the others
// enter it and wait.  simrun's --timeout then ends the job like a Slurm time limit
// (SIGTERM, SIGKILL).
void expect_hang_shows_the_missing_op(int ranks, int per_group) {
  const std::string dir = make_temp_dir("hang");
  Exit e =
      run({Paths::simrun(), "-n", std::to_string(ranks), "--nodes", "2", "--timeout", "6",
           "--kill-after", "3", "--", Paths::app(), "hang", "3", "5", std::to_string(per_group)},
          probe_env(dir, {"RINGSIDE_WATCHDOG_TIMEOUT=1s"}), 60);
  EXPECT_NE(e.status, 0) << "the job was killed";
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), static_cast<size_t>(ranks)) << e.err;
  const uint64_t first = 5 * static_cast<uint64_t>(per_group);  // op 5's first seq
  for (const auto& t : traces) {
    if (t.meta.rank == 3) {
      uint64_t max_seq = 0;
      for (const auto& o : t.ops) max_seq = std::max(max_seq, o.seq);
      EXPECT_EQ(max_seq, first - 1) << "rank 3 never entered op 5";
      EXPECT_TRUE(t.pending.empty());
      continue;
    }
    // Op 5 was entered, launched and never completed: outstanding, marked by the
    // watchdog, started on the device (every op of its group: they start together).
    for (uint64_t seq = first; seq < first + per_group; ++seq) {
      bool found = false;
      for (const auto& o : t.pending) {
        if (o.seq != seq) continue;
        found = true;
        EXPECT_TRUE(o.flags & trace::kFlagWatchdog) << t.path;
        EXPECT_NE(o.status, static_cast<uint8_t>(trace::OpStatus::kComplete));
        EXPECT_NE(o.t_dev_start_ns, trace::kUnknownTime) << t.path << " seq " << seq;
      }
      EXPECT_TRUE(found) << t.path << ": seq " << seq << " not in /pending";
      bool watchdog_event = false;
      for (const auto& ev : t.events) {
        if (ev.kind == static_cast<uint32_t>(EventKind::kWatchdog) && ev.seq == seq)
          watchdog_event = true;
      }
      EXPECT_TRUE(watchdog_event) << t.path << " seq " << seq;
    }
    for (const auto& o : t.ops) EXPECT_LT(o.seq, first) << "only the ops before op 5 completed";
  }
  std::filesystem::remove_all(dir);
}

TEST(ProbeSafety, HangShowsTheMissingOpAfterTheWatchdog) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  expect_hang_shows_the_missing_op(8, 1);
}

TEST(ProbeSafety, HangInsideAGroupShowsEveryOpOfItStarted) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  expect_hang_shows_the_missing_op(4, 3);
}

TEST(ProbeSafety, SigtermThenSigkillLeavesAClosedReadableTrace) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("term");
  Process p({Paths::app(), "loop", "20"}, single_rank_env(dir, ringside::sim::find_free_port()));
  ASSERT_TRUE(p.wait_for_output("ready", 60)) << "the app never got going";
  const auto term = std::chrono::steady_clock::now();
  p.signal(SIGTERM);
  // Slurm's grace period (KillWait, 30 s by default), then SIGKILL as Slurm sends it.
  // The probe's final flush must end well within it: its own bound is
  // RINGSIDE_SHUTDOWN_TIMEOUT (10 s), far less on an idle machine.
  const bool ended_in_grace = p.exits_within(20);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - term).count();
  p.signal(SIGKILL);
  const Exit e = p.wait(10);
  EXPECT_TRUE(ended_in_grace) << "still running " << took_s << " s after SIGTERM";
  EXPECT_EQ(e.status, 128 + SIGTERM) << "the default SIGTERM action still ends the job\n" << e.err;
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 1u) << e.err;
  // The 20 ops before "ready" finished on the device before SIGTERM: the handler's
  // completion pass timed them, so none is left in /pending.
  EXPECT_GE(traces[0].ops.size(), 20u)
      << traces[0].pending.size() << " ops in /pending; exit took " << took_s << " s";
  EXPECT_TRUE(traces[0].has_event(EventKind::kSignal));
  EXPECT_TRUE(traces[0].has_event(EventKind::kShutdown)) << "the final flush ran";
  std::filesystem::remove_all(dir);
}

// A crash is recorded (the analyzer's proof of which rank died first), the
// trace is closed, and the process still dies of its signal.
TEST(ProbeSafety, CrashSignalsAreRecordedAndStillKillTheProcess) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS}) {
    const std::string dir = make_temp_dir("crash");
    Process p({Paths::app(), "crash", "12", std::to_string(sig)},
              single_rank_env(dir, ringside::sim::find_free_port()));
    const Exit e = p.wait(120);
    EXPECT_EQ(e.status, 128 + sig) << "the crash's exit status is the application's\n" << e.err;
    const auto traces = load_traces(dir);
    ASSERT_EQ(traces.size(), 1u);
    EXPECT_GE(traces[0].ops.size(), 12u);
    bool recorded = false;
    for (const auto& ev : traces[0].events) {
      recorded =
          recorded || (ev.kind == static_cast<uint32_t>(EventKind::kSignal) && ev.value == sig);
    }
    EXPECT_TRUE(recorded) << "signal " << sig << " not in /events";
    EXPECT_TRUE(traces[0].has_event(EventKind::kShutdown)) << "the final flush ran";
    std::filesystem::remove_all(dir);
  }
}

TEST(ProbeSafety, SigkillAloneKeepsEverythingUpToTheLastFlush) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("kill");
  Process p({Paths::app(), "loop", "50"}, single_rank_env(dir, ringside::sim::find_free_port()));
  ASSERT_TRUE(p.wait_for_output("ready", 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // several 200 ms flushes
  p.signal(SIGKILL);
  const Exit e = p.wait(10);
  EXPECT_EQ(e.status, 128 + SIGKILL);
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_GE(traces[0].ops.size(), 50u) << "ops done before 'ready' were flushed";
  EXPECT_FALSE(traces[0].has_event(EventKind::kShutdown));
  ASSERT_FALSE(traces[0].stats.empty());
  std::filesystem::remove_all(dir);
}

TEST(ProbeSafety, BadValuesWarnOnceAndTheJobRunsOnDefaults) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("badenv");
  const std::vector<std::string> argv{Paths::simrun(), "-n", "2", "--nodes", "1", "--",
                                      Paths::app(),    "ops"};
  const Exit plain = run(argv, {Paths::sim_env()});
  const Exit probed = run(argv, probe_env(dir, {"RINGSIDE_SAMPLE_HZ=fast", "RINGSIDE_RING_SIZE=-3",
                                                "RINGSIDE_FLUSH_INTERVL=1s"}));
  EXPECT_EQ(probed.status, plain.status) << probed.err;
  EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out));
  for (const char* name : {"RINGSIDE_SAMPLE_HZ", "RINGSIDE_RING_SIZE", "RINGSIDE_FLUSH_INTERVL"}) {
    EXPECT_NE(probed.err.find(name), std::string::npos) << name << " not reported:\n" << probed.err;
  }
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 2u) << "still traced, on defaults";
  EXPECT_NE(traces[0].meta.config.find("\"RINGSIDE_SAMPLE_HZ\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ProbeSafety, UnwritableDirectoryWarnsAndTheJobRunsUntraced) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string base = make_temp_dir("nodir");
  const std::string file = base + "/not-a-dir";
  std::ofstream(file) << "x";
  const std::vector<std::string> argv{Paths::simrun(), "-n", "2", "--nodes", "1", "--",
                                      Paths::app(),    "ops"};
  const Exit plain = run(argv, {Paths::sim_env()});
  const Exit probed = run(argv, probe_env(file + "/traces"));
  EXPECT_EQ(probed.status, plain.status) << probed.err;
  EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out));
  EXPECT_NE(probed.err.find("untraced"), std::string::npos) << probed.err;
  EXPECT_NE(probed.err.find("not-a-dir"), std::string::npos) << "the warning names the directory";
  std::filesystem::remove_all(base);
}

// Many forks, from several threads at once, while the writer flushes all the
// time: every child exits, the parent's trace has all its ops and nothing of
// the children.  (The deadlock a child forked while the writer is inside HDF5
// would hit is made certain, not left to chance, by the next test.)
TEST(ProbeSafety, ForkedChildrenExitAndLeaveTheParentsTraceIntact) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("fork");
  constexpr int kOps = 5;
  constexpr int kForks = 50;   // rounds
  constexpr int kThreads = 4;  // forking at once in each round
  const std::vector<std::string> argv{Paths::simrun(),
                                      "-n",
                                      "2",
                                      "--nodes",
                                      "1",
                                      "--",
                                      Paths::app(),
                                      "fork",
                                      std::to_string(kOps),
                                      std::to_string(kForks),
                                      std::to_string(kThreads)};
  // Generous limits: 400 forks take a while on a loaded machine.
  const Exit plain = run(argv, {Paths::sim_env()}, 120);
  const Exit probed =
      run(argv, probe_env(dir, {"RINGSIDE_FLUSH_INTERVAL=0.05", "RINGSIDE_SAMPLE_HZ=10"}), 120);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(probed.status, 0) << "a child or the job hung (-1 = killed after 120 s): "
                              << probed.err;
  EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out)) << "every child exited 0";
  EXPECT_NE(probed.out.find("r0 children_failed rc=0 sum=0.000"), std::string::npos) << probed.out;
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 2u) << "the children wrote no file of their own";
  for (const auto& t : traces) {
    EXPECT_EQ(t.ops.size(), static_cast<size_t>(kOps * (kForks + 1)))
        << "ops before and after the forks, nothing from the children";
    EXPECT_TRUE(t.has_event(EventKind::kShutdown)) << "the parent closed its file normally";
  }
  std::filesystem::remove_all(dir);
}

// The writer inside HDF5 (holding HDF5's global lock) for longer than fork()
// waits for it, as a writer stuck in slow I/O would be: the children inherit
// the lock held by a thread they do not have.  They must exit (their exit
// handlers run) without entering HDF5, and the parent's trace is complete.
TEST(ProbeSafety, ChildrenForkedWhileTheWriterIsStuckInHdf5Exit) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("forkstuck");
  constexpr int kOps = 5;
  constexpr int kForks = 2;
  const Exit e =
      run({Paths::app(), "fork_writer_stuck", std::to_string(kOps), std::to_string(kForks)},
          single_rank_env(dir, ringside::sim::find_free_port()), 240);
  ASSERT_EQ(e.status, 0) << e.err;
  ASSERT_NE(e.out.find("r0 writer_held rc=0 sum=1.000"), std::string::npos)
      << "the writer never wrote:\n"
      << e.out;
  EXPECT_NE(e.out.find("r0 children_stuck rc=0 sum=0.000"), std::string::npos)
      << "a child hung in HDF5 at exit:\n"
      << e.out;
  EXPECT_NE(e.out.find("r0 children_failed rc=0 sum=0.000"), std::string::npos) << e.out;
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].ops.size(), static_cast<size_t>(2 * kOps));
  EXPECT_TRUE(traces[0].has_event(EventKind::kShutdown)) << "the parent closed its file normally";
  std::filesystem::remove_all(dir);
}

// The probe takes over HDF5's exit-time shutdown when it initialises HDF5
// first; a child's own HDF5 file, left open at exit, is still closed then,
// as without the probe.
TEST(ProbeSafety, ForkedChildsOwnHdf5FileIsClosedAtExit) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("forkh5");
  const std::string plain_file = dir + "/plain-child.h5";
  const std::string probed_file = dir + "/probed-child.h5";
  const Exit plain =
      run({Paths::app(), "fork_child_hdf5", "5", plain_file},
          {Paths::sim_env(), "RANK=0", "WORLD_SIZE=1", "LOCAL_RANK=0",
           "NCCL_COMM_ID=127.0.0.1:" + std::to_string(ringside::sim::find_free_port())},
          120);
  const Exit probed = run({Paths::app(), "fork_child_hdf5", "5", probed_file},
                          single_rank_env(dir + "/traces", ringside::sim::find_free_port()), 120);
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(probed.status, 0) << probed.err;
  EXPECT_NE(plain.out.find("r0 child_file rc=0 sum=10.000"), std::string::npos) << plain.out;
  EXPECT_EQ(probed.out, plain.out);
  EXPECT_EQ(load_traces(dir + "/traces").size(), 1u);
  std::filesystem::remove_all(dir);
}

// Trace names are predictable: anyone who can write to the output directory
// can plant a symlink there.  Its target is never written; the trace takes
// the name instead.
TEST(ProbeSafety, SymlinkPlantedAtTheTraceNameIsNeverFollowed) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string base = make_temp_dir("plant");
  const std::string dir = base + "/traces";
  std::filesystem::create_directory(dir);
  const std::vector<std::string> argv{Paths::simrun(), "-n", "2", "--nodes", "1", "--",
                                      Paths::app(),    "ops"};
  for (int r = 0; r < 2; ++r) {
    const std::string victim = base + "/victim" + std::to_string(r);
    std::ofstream(victim) << "precious " << r;
    std::filesystem::create_symlink(victim, dir + "/" + trace::trace_file_name("safety", r));
  }
  const Exit plain = run(argv, {Paths::sim_env()});
  const Exit probed = run(argv, probe_env(dir));
  EXPECT_EQ(probed.status, plain.status) << probed.err;
  EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(read_file(base + "/victim" + std::to_string(r)), "precious " + std::to_string(r))
        << "the probe wrote through a planted symlink";
    const std::string trace_path = dir + "/" + trace::trace_file_name("safety", r);
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(trace_path)));
  }
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 2u) << probed.err;
  for (const auto& t : traces) EXPECT_FALSE(t.ops.empty()) << t.path;
  std::filesystem::remove_all(base);
}

// Slurm job steps of one job: each step's ranks get their own files (the
// step is in the name and an attribute), and analyze refuses to mix them.
TEST(ProbeSafety, JobStepsKeepTheirOwnTracesAndAnalyzeRefusesToMixThem) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  RINGSIDE_REQUIRE_FILE(Paths::ringside());
  const std::string dir = make_temp_dir("steps");
  for (const char* step : {"0", "1"}) {
    const Exit e =
        run({Paths::app(), "ops"},
            {Paths::sim_env(), "LD_PRELOAD=" + Paths::probe(), "RINGSIDE_OUTPUT=" + dir,
             "SLURM_JOB_ID=4242", std::string("SLURM_STEP_ID=") + step, "SLURM_PROCID=0",
             "SLURM_NTASKS=1", "SLURM_LOCALID=0", "RANK=0", "WORLD_SIZE=1",
             "NCCL_COMM_ID=127.0.0.1:" + std::to_string(ringside::sim::find_free_port())});
    ASSERT_EQ(e.status, 0) << e.err;
  }
  const auto traces = load_traces(dir);
  ASSERT_EQ(traces.size(), 2u) << "step 1 overwrote step 0";
  EXPECT_EQ(traces[0].path, dir + "/ringside-4242.0-r000000.h5");
  EXPECT_EQ(traces[0].meta.step_id, "0");
  EXPECT_EQ(traces[1].meta.step_id, "1");

  const Exit mixed = run({Paths::ringside(), "analyze", "--no-progress", dir}, {});
  EXPECT_EQ(mixed.status, 2) << mixed.out << mixed.err;
  EXPECT_NE(mixed.err.find("step 0: 1 file, step 1: 1 file"), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("--step"), std::string::npos) << mixed.err;

  const Exit one =
      run({Paths::ringside(), "analyze", "--no-progress", "--step", "1", "--json", "-", dir}, {});
  EXPECT_TRUE(one.status == 0 || one.status == 1) << "analyzed (exit 0 or 1): " << one.err;
  EXPECT_NE(one.out.find("\"step\": \"1\""), std::string::npos) << one.out;
  std::filesystem::remove_all(dir);
}

// Every rank echoes configuration errors: a huge or binary value must not
// flood the job's log.
TEST(ProbeSafety, HugeBadValueIsEchoedShortened) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("hugeenv");
  const std::vector<std::string> argv{Paths::simrun(), "-n", "2", "--nodes", "1", "--",
                                      Paths::app(),    "ops"};
  const std::string huge = std::string(100000, '9') + "\x1b[2J";
  const Exit plain = run(argv, {Paths::sim_env()});
  const Exit probed = run(argv, probe_env(dir, {"RINGSIDE_RING_SIZE=" + huge}));
  EXPECT_EQ(probed.status, plain.status) << probed.err.substr(0, 2000);
  EXPECT_EQ(sorted_lines(probed.out), sorted_lines(plain.out));
  EXPECT_LT(probed.err.size(), 4000u) << probed.err.substr(0, 2000);
  EXPECT_NE(probed.err.find("RINGSIDE_RING_SIZE=999"), std::string::npos) << probed.err;
  EXPECT_NE(probed.err.find("(100004 bytes)"), std::string::npos) << probed.err;
  EXPECT_EQ(probed.err.find('\x1b'), std::string::npos) << "control characters reached stderr";
  EXPECT_EQ(load_traces(dir).size(), 2u) << "traced on the default ring size";
  std::filesystem::remove_all(dir);
}

// A job that ends right after creating its communicator (before the writer's
// first wake-up) still leaves a complete, closed trace: the exit waits for it.
TEST(ProbeSafety, ExitRightAfterInitLeavesACompleteTrace) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string dir = make_temp_dir("init");
    const Exit e = run({Paths::simrun(), "-n", "2", "--nodes", "1", "--", Paths::app(), "init"},
                       probe_env(dir));
    ASSERT_EQ(e.status, 0) << e.err;
    const auto traces = load_traces(dir);
    ASSERT_EQ(traces.size(), 2u) << "attempt " << attempt;
    for (const auto& t : traces) {
      EXPECT_EQ(t.comms.size(), 1u) << t.path;
      EXPECT_TRUE(t.has_event(EventKind::kShutdown)) << t.path;
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(ProbeSafety, DisabledProbeWritesNothing) {
  RINGSIDE_REQUIRE_FILE(Paths::app());
  const std::string dir = make_temp_dir("off");
  const Exit e = run({Paths::simrun(), "-n", "2", "--nodes", "1", "--", Paths::app(), "ops"},
                     probe_env(dir, {"RINGSIDE_ENABLE=0"}));
  EXPECT_EQ(e.status, 0) << e.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(RingsideRun, SetsThePreloadAndTheVariables) {
  RINGSIDE_REQUIRE_FILE(Paths::ringside());
  const Exit e = run({Paths::ringside(), "run", "-o", "rel-traces", "--sample-hz", "5",
                      "--no-device-timing", "--watchdog-timeout", "30s", "--", "sh", "-c",
                      "echo $LD_PRELOAD; echo $RINGSIDE_OUTPUT; echo $RINGSIDE_SAMPLE_HZ; "
                      "echo $RINGSIDE_DEVICE_TIMING; echo $RINGSIDE_WATCHDOG_TIMEOUT"},
                     {});
  ASSERT_EQ(e.status, 0) << e.err;
  const auto lines = e.out;
  EXPECT_NE(lines.find("libringside_probe.so"), std::string::npos) << lines;
  EXPECT_NE(lines.find(std::filesystem::current_path().string() + "/rel-traces"), std::string::npos)
      << "the output directory is made absolute";
  EXPECT_NE(lines.find("\n5\n0\n30s"), std::string::npos) << lines;

  const Exit bad = run({Paths::ringside(), "run", "--sample-hz", "50", "--", "true"}, {});
  EXPECT_EQ(bad.status, 2) << "out-of-range flag is a usage error";
  const Exit missing = run({Paths::ringside(), "run", "--", "/no/such/program"}, {});
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("/no/such/program"), std::string::npos) << missing.err;
}

TEST(RingsideRun, TheProbeIsNcclsProfilerPluginUnlessTheUserChoseOneOrSaidNoLinks) {
  RINGSIDE_REQUIRE_FILE(Paths::ringside());
  const std::vector<std::string> show{"--", "sh", "-c", "echo plugin=$NCCL_PROFILER_PLUGIN"};
  std::vector<std::string> argv{Paths::ringside(), "run"};
  argv.insert(argv.end(), show.begin(), show.end());
  const Exit on = run(argv, {});
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_NE(on.out.find("plugin=/"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("libringside_probe.so"), std::string::npos) << on.out;
  const Exit kept = run(argv, {"NCCL_PROFILER_PLUGIN=inspector"});
  ASSERT_EQ(kept.status, 0) << kept.err;
  EXPECT_NE(kept.out.find("plugin=inspector"), std::string::npos) << kept.out;
  EXPECT_NE(kept.err.find("NCCL_PROFILER_PLUGIN is already inspector"), std::string::npos)
      << kept.err;
  std::vector<std::string> plain{Paths::ringside(), "run", "--no-links"};
  plain.insert(plain.end(), show.begin(), show.end());
  const Exit off = run(plain, {});
  EXPECT_NE(off.out.find("plugin=\n"), std::string::npos) << "not set with --no-links";
}

}  // namespace
}  // namespace ringside::probe::testing
