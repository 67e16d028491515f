// Helpers: temporary directories, synth + analyze in one call, running the CLI.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "analyze.h"
#include "ringside/trace_schema.h"
#include "synth/synth_spec.h"

namespace ringside::analysis::test {

// One millisecond in the traces' nanoseconds, for hand-made timelines.
inline constexpr int64_t kMs = 1'000'000;

// A fresh directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

synth::SynthSpec small_spec(const std::string& dir, uint64_t seed = 1);
// Writes traces for `spec` with the given faults and analyzes them.
Report synth_and_analyze(synth::SynthSpec spec, const std::vector<std::string>& faults = {});

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};
CliResult run_cli(const std::vector<std::string>& args);

const Finding* find_kind(const Report& r, const std::string& kind, const std::string& subkind = "");
// The slow links `r` names, as findings or below the cost bar.
std::vector<const Finding*> slow_links(const Report& r);

// `ringside analyze` of `dir` with default options and no progress output; a failed
// analysis fails the test (and gives an empty report).
Report analyze_quietly(const std::string& dir);

// Traces written op by op, for shapes ringside synth does not make.  A complete,
// device-timed op of 4 MiB (times in ns, one clock for every rank), entered on the host
// 30 us before its device start; peer -1.
trace::OpRecord hand_op(trace::OpKind kind, uint64_t comm, uint64_t seq, int64_t start,
                        int64_t end);
// `n` ops of `kind` on `comm`, seq 0 .. n-1, one every `every` ns from `start` on, each
// `takes` ns on the device.
std::vector<trace::OpRecord> hand_ops(trace::OpKind kind, uint64_t comm, int n, int64_t start,
                                      int64_t every, int64_t takes);
// An event the probe records at `t` (a signal, a communicator abort, ...): `value` (the
// signal number), on communicator `comm` (0: none), with its text.
trace::EventRecord hand_event(trace::EventKind kind, int64_t t, int64_t value, const char* text,
                              uint64_t comm = 0);
// The rank's membership of a communicator made from a unique id.
trace::CommRecord hand_comm(uint64_t id, int nranks, int rank_in_comm);
// Writes rank `rank`'s closed trace of job `job` (`world` ranks, `per_node` to a node
// named node1, node2, ...) into `dir`: its comms and ops, and tracing stopped at `end_ns`.
// With `host_wait_ns`, its threads waited that long for a CPU from its first op to the end
// (flushed before the first op and at the end; with `one_flush`, at the end only, as a
// job shorter than the flush interval is: the wait then counts from the clock reference).
// `pending`: the ops outstanding at its last flush; `events`: recorded before the end.
void write_hand_trace(const std::string& dir, const std::string& job, int rank, int world,
                      int per_node, std::span<const trace::CommRecord> comms,
                      std::span<const trace::OpRecord> ops, int64_t end_ns,
                      int64_t host_wait_ns = 0, bool one_flush = false,
                      std::span<const trace::OpRecord> pending = {},
                      std::span<const trace::EventRecord> events = {});
// Gives rank `rank`'s closed trace in `dir` `rows` rows of `dataset` (fewer than it
// holds), as a writer stopped short of writing them leaves it.
void cut_table(const std::string& dir, int rank, const char* dataset, uint64_t rows);

}  // namespace ringside::analysis::test
