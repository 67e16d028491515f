// What `ringside synth` generates: job shape, network model and injected faults.
// Parsed from CLI flags; every value is validated with a message naming the flag.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/status.h"

namespace ringside::analysis::synth {

enum class FaultKind {
  kStraggler,      // rank=R factor=F: its compute takes F times longer
  kSlowNode,       // node=N factor=F: every GPU of node N computes F times slower
  kThrottle,       // rank=R factor=F: as straggler, and NVML shows thermal throttling
  kImbalanceData,  // amount=A: per step, each rank's work varies by up to A (moves with the data)
  kHeavySample,    // factor=F [rank=R every=K]: in every K-th step one rank (drawn anew,
                   // or R) has F times more work
  kHeavyStage,     // stage=S factor=F: pipeline stage S has F times more work
  kHeavyReplica,   // replica=D factor=F: data-parallel replica D has F times more work
  kSlowNic,        // node=N factor=F: inter-node bandwidth of node N divided by F
  kSlowPair,       // a=N1 b=N2 factor=F: bandwidth between N1 and N2 divided by F
  kSlowP2p,        // rank=R peer=P factor=F: send/recv between R and P only, F times slower
  kStop,           // rank=R op=N: R never enters world op N; the others wait there
  kAllStuck,       // op=N: every rank enters world op N, none completes
  kStall,          // rank=R op=N: R enqueues world op N but its GPU never starts it
  kDesync,         // rank=R op=N: R calls world op N with a different count; the job hangs
  kCrash,          // rank=R op=N: R dies before world op N (its trace ends); the others wait
  kMissing,        // rank=R: no trace file for R
  kXid,            // rank=R code=C step=S: an XID event
  kEcc,            // rank=R step=S: uncorrectable ECC errors and a remapped row appear
};

struct Fault {
  FaultKind kind = FaultKind::kStraggler;
  int rank = -1;
  int peer = -1;       // slow_p2p other end
  std::string node;    // slow_nic node, slow_pair first end
  std::string node_b;  // slow_pair second end
  double factor = 1;
  double amount = 0;
  int64_t op = -1;
  int stage = -1;
  int replica = -1;
  int64_t code = 79;
  int64_t step = 0;
  int64_t every = 1;  // heavy_sample: in every this many steps
};

struct SynthSpec {
  std::string out_dir;
  std::string job_id = "synth";
  int ranks = 8;
  int nodes = 2;
  int steps = 50;
  int tp = 1;  // tensor-parallel group size (consecutive ranks)
  int pp = 1;  // pipeline stages (contiguous blocks of ranks)
  // Communicators made by ncclCommSplit of the world (parent, colour) or each from a
  // unique id of its own, as PyTorch's new_group makes them (no parent).
  bool unique_ids = false;
  // Each communicator's ops on a stream of its own (as PyTorch process groups do),
  // else one stream for every op.
  bool comm_streams = false;
  // Gradient buckets all-reduced on a stream of their own while the backward pass
  // goes on; the optimizer waits for them at the end of the step.  Transfers on the
  // main stream that meet a bucket in flight are slowed by the contention.
  bool overlap = false;
  std::vector<uint64_t> buckets{25ull << 20, 25ull << 20, 25ull << 20, 12ull << 20};
  int tp_ops = 4;  // tensor-parallel all-reduces per step
  uint64_t tp_bytes = 8ull << 20;
  uint64_t pp_bytes = 16ull << 20;
  double compute_ms = 60;  // per step and rank, before faults
  double jitter = 0.02;    // relative standard deviation of compute chunks
  // Host delays: the chance that a compute chunk is held up once (the process
  // descheduled), by 30-100% of its length.  Noise, not a fault.
  double hiccups = 0;
  // Share of the job the threads of each rank's process waited for a CPU (the
  // probe's host_run_delay_ns): a host with more runnable threads than cores.
  double host_wait = 0;
  double intra_gbps = 150;  // bus bandwidth inside a node, GB/s
  double inter_gbps = 20;   // bus bandwidth between nodes, GB/s
  double intra_latency_us = 5;
  double inter_latency_us = 15;
  double clock_offset_ms = 0;  // node clocks differ by up to this much
  double sample_hz = 2;        // GPU counter samples per second
  uint64_t seed = 1;
  // Files end as those of a job still running do: no end-of-tracing record
  // (`ringside watch` then follows them until --until).
  bool live = false;
  // The last grow_steps steps are written one at a time, grow_every_s seconds apart,
  // each followed by a flush of every rank's file: the traces of a job that runs while
  // `ringside watch` follows it (every file open at once, whatever writer_batch).
  int grow_steps = 0;
  double grow_every_s = 1;
  // Also writes /links rows as the probe's NCCL profiler plugin does: each rank's
  // network transfers (ring neighbours and send/recv peers on other nodes), per
  // channel and flush window.
  bool links = false;
  size_t chunk_records = 2048;  // HDF5 chunk size of the written traces
  int writer_batch = 256;       // ranks written at once (bounds memory)
  std::vector<Fault> faults;
};

// "kind:key=value,key=value", e.g. "straggler:rank=5,factor=1.2".
Result<Fault> parse_fault(std::string_view text);
const char* fault_kind_name(FaultKind kind);
// Cross-checks (ranks divisible by nodes, tp*pp divides ranks, fault ranks in range...).
Status validate(const SynthSpec& spec);
// "node<k>" for k = 1..nodes, the same names simrun gives.
std::string node_name(int node_index);

}  // namespace ringside::analysis::synth
