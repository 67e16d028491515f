// Trace format v1: the one list of every record field and file attribute.
//
// Each X-macro list below generates the C++ record struct, the HDF5 compound
// layout written by TraceWriter, the names TraceReader checks, and the table
// that tests compare against docs/trace-format.md.  Add a field here, bump
// kSchemaVersion when the meaning of an existing field changes, and update the doc.
#pragma once

#include <cstdint>

namespace ringside::trace {

inline constexpr int kSchemaVersion = 1;
inline constexpr int64_t kUnknownTime = -1;  // a timestamp that was never observed
inline constexpr int kTextLen = 96;          // fixed text size in event records
// The probe stores op times at this resolution (low bits cleared): finer than
// CUDA events resolve (about 0.5 us) and than a probe call costs, and bits that
// are only noise would not compress (they were a sixth of a trace's bytes).
inline constexpr int64_t kOpTimeResolutionNs = 64;
inline constexpr int64_t at_op_time_resolution(int64_t t) {
  return t < 0 ? t : t - t % kOpTimeResolutionNs;
}

// X(type, name, unit, description)
//
// Times are nanoseconds on CLOCK_MONOTONIC relative to the file's
// `clock_monotonic_ns` attribute (see docs/trace-format.md, "Clocks").
#define RINGSIDE_OP_FIELDS(X)                                                                  \
  X(int64_t, t_enter_ns, "ns", "host time the application entered the NCCL call")              \
  X(int64_t, t_exit_ns, "ns", "host time the NCCL call returned (-1 if it never returned)")    \
  X(int64_t, t_dev_start_ns, "ns", "device time the op started on its stream (-1 if unknown)") \
  X(int64_t, t_dev_end_ns, "ns", "device time the op finished on its stream (-1 if unknown)")  \
  X(uint64_t, comm_id, "", "communicator id, equal on every member rank")                      \
  X(uint64_t, seq, "", "collective sequence number within the communicator, from 0")           \
  X(uint64_t, count, "elements", "element count as passed to NCCL")                            \
  X(uint64_t, bytes, "bytes", "message size used for bandwidth (nccl-tests convention)")       \
  X(uint64_t, stream, "", "cudaStream_t value the op was enqueued on")                         \
  X(uint32_t, group_id, "",                                                                    \
    "per-thread group number when issued inside ncclGroupStart/End, else 0")                   \
  X(int32_t, peer, "", "root for rooted collectives, peer for send/recv, else -1")             \
  X(uint32_t, peer_seq, "", "send/recv only: sequence number per (peer, direction), from 0")   \
  X(uint8_t, op, "", "operation, see OpKind")                                                  \
  X(uint8_t, dtype, "", "ncclDataType_t value")                                                \
  X(uint8_t, redop, "", "ncclRedOp_t value; 255 for user-defined ops; 0 where not applicable") \
  X(uint8_t, flags, "", "bit set, see OpFlag")                                                 \
  X(uint8_t, status, "", "see OpStatus")

// One row per GPU counter sample.  `valid` says which fields were read.
#define RINGSIDE_SAMPLE_FIELDS(X)                                                     \
  X(int64_t, t_ns, "ns", "sample time")                                               \
  X(int32_t, device, "", "CUDA device ordinal the sample is for")                     \
  X(uint32_t, valid, "", "bit set of fields that were read, see SampleValid")         \
  X(uint32_t, sm_clock_mhz, "MHz", "SM clock")                                        \
  X(uint32_t, mem_clock_mhz, "MHz", "memory clock")                                   \
  X(uint64_t, clock_event_reasons, "", "NVML clock event (throttle) reason bit mask") \
  X(uint32_t, temperature_c, "C", "GPU temperature")                                  \
  X(uint32_t, power_mw, "mW", "power draw")                                           \
  X(uint32_t, util_gpu_pct, "%", "GPU utilization")                                   \
  X(uint32_t, util_mem_pct, "%", "memory controller utilization")                     \
  X(uint64_t, mem_used_bytes, "bytes", "device memory in use")                        \
  X(uint64_t, ecc_corrected, "", "volatile corrected ECC error count")                \
  X(uint64_t, ecc_uncorrected, "", "volatile uncorrected ECC error count")            \
  X(uint32_t, remapped_rows, "", "remapped rows (correctable + uncorrectable)")       \
  X(uint32_t, pcie_replays, "", "PCIe replay counter")

#define RINGSIDE_EVENT_FIELDS(X)                                                                 \
  X(int64_t, t_ns, "ns", "event time")                                                           \
  X(uint64_t, comm_id, "", "communicator concerned, 0 if none")                                  \
  X(uint64_t, seq, "", "op sequence concerned (watchdog), else 0")                               \
  X(int64_t, value, "", "kind-specific value: XID code, signal number, NCCL result, drop count") \
  X(int32_t, device, "", "CUDA device ordinal, -1 if none")                                      \
  X(uint32_t, kind, "", "see EventKind")                                                         \
  X(char, text, "", "NUL-terminated message, at most 95 bytes")

// One row per communicator this rank joined.  Members are found by joining the
// comm tables of all ranks on comm_id (each rank records its own place).
#define RINGSIDE_COMM_FIELDS(X)                                                              \
  X(int64_t, t_ns, "ns", "time the communicator was created on this rank")                   \
  X(uint64_t, comm_id, "", "communicator id, equal on every member rank")                    \
  X(uint64_t, parent_id, "", "parent communicator id for split/shrink, else 0")              \
  X(int32_t, color, "", "split colour, else -1")                                             \
  X(int32_t, key, "", "split key, else -1")                                                  \
  X(uint32_t, ordinal, "", "split/shrink ordinal on the parent (n-th split of that parent)") \
  X(int32_t, nranks, "", "communicator size")                                                \
  X(int32_t, rank, "", "this rank's rank within the communicator")                           \
  X(int32_t, device, "", "CUDA device ordinal the communicator uses")                        \
  X(uint8_t, origin, "", "how it was created, see CommOrigin")

// Appended at every flush: the running totals at that moment.
#define RINGSIDE_STATS_FIELDS(X)                                                            \
  X(int64_t, t_ns, "ns", "flush time")                                                      \
  X(uint64_t, flush_index, "", "flush number, from 1")                                      \
  X(uint64_t, ops_recorded, "", "op records captured so far")                               \
  X(uint64_t, ops_dropped, "", "op records lost because a ring was full")                   \
  X(uint64_t, samples_dropped, "", "GPU samples lost")                                      \
  X(uint64_t, events_dropped, "", "events lost")                                            \
  X(uint64_t, probe_errors, "", "internal errors counted by the producer")                  \
  X(uint64_t, pending_ops, "", "rows in this flush's /pending snapshot")                    \
  X(int64_t, host_run_delay_ns, "ns",                                                       \
    "time the process's threads waited for a CPU so far (run-queue delay, 0: unknown)")     \
  X(uint64_t, pending_start, "",                                                            \
    "1 + the /pending row where this flush's snapshot starts; 0: no rows, or not recorded") \
  X(int64_t, probe_cpu_ns, "ns",                                                            \
    "CPU time the probe's own threads used so far (writer, event completion, GPU "          \
    "sampling; not its work inside NCCL calls), 0: unknown")                                \
  X(uint64_t, ops_rows, "", "rows of /ops once this flush is visible")                      \
  X(uint64_t, samples_rows, "", "rows of /samples once this flush is visible")              \
  X(uint64_t, events_rows, "", "rows of /events once this flush is visible")                \
  X(uint64_t, comms_rows, "", "rows of /comms once this flush is visible")                  \
  X(uint64_t, links_rows, "", "rows of /links once this flush is visible")                  \
  X(uint64_t, progress_rows, "", "rows of /progress once this flush is visible")

// /progress: at each flush, one row per communicator whose progress changed since
// the previous flush (computed by the writer from the ops and the /pending snapshot
// it was given), so a reader learns where each communicator stands without reading /ops.
#define RINGSIDE_PROGRESS_FIELDS(X)                                                                \
  X(int64_t, t_ns, "ns", "flush time (as the /stats row of this flush)")                           \
  X(uint64_t, flush_index, "", "flush this row belongs to")                                        \
  X(uint64_t, comm_id, "", "communicator id, as in /ops")                                          \
  X(int64_t, entered_seq, "",                                                                      \
    "highest collective seq entered so far (/ops or /pending), -1: none")                          \
  X(int64_t, completed_seq, "", "highest collective seq completed so far (status 0), -1: none")    \
  X(int64_t, t_entered_ns, "ns", "host enter time of the op of entered_seq (-1 if none)")          \
  X(int64_t, t_completed_ns, "ns",                                                                 \
    "end time (device end, else host exit) of the op of completed_seq (-1 if none)")               \
  X(uint64_t, op_rows, "", "rows of /ops on this communicator so far (collectives and send/recv)") \
  X(uint32_t, pending_ops, "", "ops of this communicator outstanding at this flush (in /pending)") \
  X(uint8_t, state, "",                                                                            \
    "0 idle (nothing outstanding), else the OpStatus of its oldest outstanding op (1 or 2)")

// /pending: at each flush, the ops entered but not complete, and the latest ops an abort
// abandoned (status abandoned), tagged with the flush.
#define RINGSIDE_PENDING_FIELDS(X)                               \
  X(uint64_t, flush_index, "", "flush this snapshot belongs to") \
  RINGSIDE_OP_FIELDS(X)

// One row per (NCCL communicator, peer, channel, direction, source) that moved
// data in one flush window (profiler plugin events): source 0 through NCCL's
// network proxy (steps and their states), source 1 in the GPU kernel channels of
// send/recv tasks (their GPU timer; every peer, intra-node ones included).
#define RINGSIDE_LINK_FIELDS(X)                                                                   \
  X(int64_t, t_ns, "ns", "end of the window (the flush time)")                                    \
  X(uint64_t, comm_hash, "", "NCCL's communicator hash (commId of the profiler init)")            \
  X(int32_t, nranks, "", "communicator size")                                                     \
  X(int32_t, rank, "", "this rank's rank within that communicator")                               \
  X(int32_t, n_nodes, "", "nodes the communicator spans, as NCCL counts them")                    \
  X(int32_t, peer, "", "the peer's rank within that communicator")                                \
  X(uint8_t, channel, "", "NCCL channel")                                                         \
  X(uint8_t, is_send, "", "1: this rank sent to the peer; 0: received from it")                   \
  X(uint8_t, source, "",                                                                          \
    "0: the network proxy's steps; 1: the GPU kernel channels of send/recv tasks")                \
  X(uint64_t, ops, "", "proxy operations (source 1: kernel channels) completed")                  \
  X(uint64_t, steps, "", "network transfers (proxy steps) completed; 0 for source 1")             \
  X(uint64_t, bytes, "bytes", "bytes moved")                                                      \
  X(int64_t, active_ns, "ns", "sum over steps (source 1: kernel channels) of start to stop")      \
  X(int64_t, net_ns, "ns",                                                                        \
    "send: in the network (isend to completion); recv: awaiting data; source 1: kernel time")     \
  X(int64_t, peer_wait_ns, "ns", "send: waiting for the receiver's clear-to-send credit")         \
  X(int64_t, gpu_wait_ns, "ns", "send: waiting for the GPU's data; recv: flush and GPU reading")  \
  X(uint64_t, best_step_bytes, "bytes",                                                           \
    "the fastest step of >= 64 KiB (source 0: sends only; 1: a kernel channel): bytes (0: none)") \
  X(int64_t, best_step_ns, "ns", "that step's time (source 0: in the network, SendWait)")

// File attributes. X(kind, name, description); kind is Int, Str, or OptStr: a
// string added after version 1 was first written, read as "" when absent.
#define RINGSIDE_META_FIELDS(X)                                                           \
  X(Int, schema_version, "trace format version (this document: 1)")                       \
  X(Str, producer, "what wrote the file: probe, nccl_bench or synth")                     \
  X(Str, job_id, "job id (SLURM_JOB_ID or generated)")                                    \
  X(OptStr, step_id, "Slurm job step (SLURM_STEP_ID); empty: none or unknown")            \
  X(Int, rank, "global rank")                                                             \
  X(Int, local_rank, "rank within the node")                                              \
  X(Int, world_size, "number of ranks in the job")                                        \
  X(Str, rank_source, "where rank and size came from: slurm, openmpi, torchrun or none")  \
  X(Str, node, "node name (RINGSIDE_NODE_NAME, SLURMD_NODENAME or hostname)")             \
  X(Str, hostname, "hostname")                                                            \
  X(Int, pid, "process id")                                                               \
  X(Int, gpu_device, "CUDA device ordinal of the rank's first communicator (-1 if none)") \
  X(Str, gpu_pci_bus_id, "PCI bus id of that device")                                     \
  X(Str, gpu_name, "device name")                                                         \
  X(Str, gpu_uuid, "device UUID")                                                         \
  X(Int, nccl_version, "NCCL version code (e.g. 22809)")                                  \
  X(Int, cuda_driver_version, "CUDA driver version code (e.g. 13000)")                    \
  X(Int, clock_realtime_ns, "CLOCK_REALTIME at the clock reference, ns since the epoch")  \
  X(Int, clock_monotonic_ns, "CLOCK_MONOTONIC at the clock reference, ns")                \
  X(Str, config, "producer configuration as JSON")                                        \
  X(Int, simulated, "1 if the devices were the ringside sim, else 0")

enum class OpKind : uint8_t {
  kUnknown = 0,
  kAllReduce = 1,
  kBroadcast = 2,
  kReduce = 3,
  kAllGather = 4,
  kReduceScatter = 5,
  kAllToAll = 6,
  kGather = 7,
  kScatter = 8,
  kSend = 9,
  kRecv = 10,
};

enum OpFlag : uint8_t {
  kFlagInGroup = 1 << 0,       // issued between ncclGroupStart and ncclGroupEnd
  kFlagInPlace = 1 << 1,       // send and receive buffers were the same (ncclBcast too)
  kFlagGraphCapture = 1 << 2,  // issued while its stream was capturing a CUDA graph
  kFlagDeviceTimed = 1 << 3,   // device start and end come from stream events
  kFlagWatchdog = 1 << 4,      // outstanding past the watchdog timeout
  kFlagNcclError = 1 << 5,     // the NCCL call returned an error
};

enum class OpStatus : uint8_t {
  kComplete = 0,       // returned on the host and finished on the device (or untimed)
  kHostPending = 1,    // entered, the host call has not returned
  kDevicePending = 2,  // returned on the host, not yet finished on the device
  kAbandoned = 3,      // the communicator was aborted/destroyed before it finished
};

enum SampleValid : uint32_t {
  kValidClocks = 1 << 0,
  kValidClockReasons = 1 << 1,
  kValidTemperature = 1 << 2,
  kValidPower = 1 << 3,
  kValidUtilization = 1 << 4,
  kValidMemory = 1 << 5,
  kValidEcc = 1 << 6,
  kValidRemappedRows = 1 << 7,
  kValidPcieReplays = 1 << 8,
};

enum class EventKind : uint32_t {
  kXid = 1,          // value = XID code
  kWarning = 2,      // a problem the producer worked around; text says what
  kError = 3,        // a producer error; text says what
  kWatchdog = 4,     // op outstanding past the timeout; comm_id, seq set
  kSignal = 5,       // value = signal number received
  kCommDestroy = 6,  // comm_id set
  kCommAbort = 7,    // comm_id set
  kAsyncError = 8,   // ncclCommGetAsyncError reported value for comm_id
  kShutdown = 9,     // clean end of tracing
};

enum class CommOrigin : uint8_t {
  kInitRank = 1,
  kInitAll = 2,
  kSplit = 3,
  kShrink = 4,
  kInitScalable = 5,
  kBench = 6,
};

#define RINGSIDE_DECLARE_FIELD(type, name, unit, desc) type name;
#define RINGSIDE_DECLARE_TEXT_FIELD(type, name, unit, desc) type name;

struct OpRecord {
  RINGSIDE_OP_FIELDS(RINGSIDE_DECLARE_FIELD)
};
struct SampleRecord {
  RINGSIDE_SAMPLE_FIELDS(RINGSIDE_DECLARE_FIELD)
};
struct CommRecord {
  RINGSIDE_COMM_FIELDS(RINGSIDE_DECLARE_FIELD)
};
struct StatsRecord {
  RINGSIDE_STATS_FIELDS(RINGSIDE_DECLARE_FIELD)
};
struct LinkRecord {
  RINGSIDE_LINK_FIELDS(RINGSIDE_DECLARE_FIELD)
};
struct ProgressRecord {
  RINGSIDE_PROGRESS_FIELDS(RINGSIDE_DECLARE_FIELD)
};
// /links: steps smaller than this are latency-bound and never a link's best step.
inline constexpr uint64_t kBestStepMinBytes = 64 << 10;
// Whether a step that moved `bytes` in `ns` may be a link's best step.
inline bool best_step_candidate(uint64_t bytes, int64_t ns) {
  return bytes >= kBestStepMinBytes && ns > 0;
}
// True if a step that moved `bytes` in `ns` was faster than the best so far.
inline bool faster_step(uint64_t bytes, int64_t ns, uint64_t best_bytes, int64_t best_ns) {
  if (!best_step_candidate(bytes, ns)) return false;
  if (best_bytes == 0 || best_ns <= 0) return true;
  return static_cast<double>(bytes) * static_cast<double>(best_ns) >
         static_cast<double>(best_bytes) * static_cast<double>(ns);
}

struct PendingRecord {
  uint64_t flush_index;
  OpRecord op;
};
// EventRecord's text is a fixed array; declared by hand to keep the macro simple.
struct EventRecord {
  int64_t t_ns;
  uint64_t comm_id;
  uint64_t seq;
  int64_t value;
  int32_t device;
  uint32_t kind;
  char text[kTextLen];
};

#undef RINGSIDE_DECLARE_FIELD
#undef RINGSIDE_DECLARE_TEXT_FIELD

// Dataset names inside the file.
inline constexpr const char* kOpsDataset = "ops";
inline constexpr const char* kPendingDataset = "pending";
inline constexpr const char* kSamplesDataset = "gpu_samples";
inline constexpr const char* kEventsDataset = "events";
inline constexpr const char* kCommsDataset = "comms";
inline constexpr const char* kStatsDataset = "stats";
inline constexpr const char* kLinksDataset = "links";  // optional: producers without it omit it
inline constexpr const char* kProgressDataset = "progress";  // optional: absent from older files
// Fields added to a dataset after it was first written ("dataset.field"): a file
// without one is read with the field 0.
inline constexpr const char* kLaterFields[] = {
    "links.source",     "stats.host_run_delay_ns", "stats.pending_start", "stats.probe_cpu_ns",
    "stats.ops_rows",   "stats.samples_rows",      "stats.events_rows",   "stats.comms_rows",
    "stats.links_rows", "stats.progress_rows"};

const char* op_kind_name(OpKind kind);  // "all_reduce", ... ; "unknown" otherwise
const char* event_kind_name(EventKind kind);
inline bool is_p2p(OpKind kind) {
  return kind == OpKind::kSend || kind == OpKind::kRecv;
}
// Collectives with a root: data flows to or from one rank, so the members do not all
// end together (a broadcast's root is done once it has sent, the chain's tail last).
inline bool is_rooted(OpKind kind) {
  return kind == OpKind::kBroadcast || kind == OpKind::kReduce || kind == OpKind::kGather ||
         kind == OpKind::kScatter;
}

}  // namespace ringside::trace
