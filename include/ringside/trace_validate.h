// Range checks of everything a trace file says, against the documented schema
// (docs/trace-format.md, "Validation").  Readers trust nothing they did not
// check: a value out of range makes the file (or that rank's data) unusable,
// named, never a crash, a huge allocation or a silent wrong answer.
#pragma once

#include <cstdint>
#include <string>

#include "ringside/status.h"
#include "ringside/trace_meta.h"
#include "ringside/trace_schema.h"

namespace ringside::trace {

// Largest job a trace may claim.  Readers also bound it by the files present
// (trace_dir.cpp), so a number inside one file never sizes an allocation.
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 22;
// Most communicator ranks one process may hold: a process that drives several GPUs
// (threads, or one rank per GPU as `nccl_bench -g`) holds one rank per GPU, so a
// communicator may have more ranks than the job has processes (trace files), but not
// more than this many times as many.
inline constexpr int64_t kMaxCommRanksPerProcess = 64;
// Largest sequence number (per communicator, per send/recv peer) taken as real.
inline constexpr uint64_t kMaxSeq = uint64_t{1} << 28;
// Largest element count or message size (bytes) of one op taken as real: a buffer of
// 2^50 bytes (1 PiB) is thousands of times any GPU's memory.
inline constexpr uint64_t kMaxOpSize = uint64_t{1} << 50;
// Trace-local times (ns since the file's clock reference) beyond ~10 years are corrupt.
inline constexpr int64_t kMaxTraceTimeNs = int64_t{315'360'000} * 1'000'000'000;
// Longest text attribute kept (node names, job ids, the config JSON).
inline constexpr size_t kMaxTextAttribute = 64 * 1024;

// File attributes: rank within world_size, sizes and clocks plausible.
Status validate_meta(const TraceMeta& m, const std::string& path);
// One op record (from /ops or /pending): known enums, sizes and times in range, times in
// order.
Status validate_op(const OpRecord& op);
// One comm table row of a job of `world_size` ranks (processes): a communicator has at
// most kMaxCommRanksPerProcess ranks per process.
Status validate_comm(const CommRecord& c, int64_t world_size);
// One /links row of a job of `world_size` ranks: comm rank, peer and size in
// range, counters that cannot be negative are not.
Status validate_link(const LinkRecord& l, int64_t world_size);
// One /progress row: sequence numbers, state and times in range.
Status validate_progress(const ProgressRecord& p);
// A time field of /events, /samples or /stats.
bool plausible_time(int64_t t_ns);

}  // namespace ringside::trace
