// The timing model behind `ringside synth`: a bulk-synchronous training loop
// (tensor-parallel all-reduces, pipeline send/recv, gradient buckets, a world
// all-reduce) run on a bandwidth model, with faults.  Physically consistent:
// every member of a collective finishes at (last arrival + transfer time), so
// the slow rank shows the shortest collective, as on real NCCL.
//
// Randomness is a pure function of (seed, rank, step, slot), so the model can
// be replayed for any subset of ranks with identical results (the writer
// replays it per batch of ranks to bound memory).
#pragma once

#include <cstdint>
#include <vector>

#include "ringside/trace_schema.h"
#include "synth/synth_spec.h"

namespace ringside::analysis::synth {

struct SynthComm {
  uint64_t id = 0;
  uint64_t parent = 0;
  int color = -1;
  uint32_t ordinal = 0;
  trace::CommOrigin origin = trace::CommOrigin::kInitRank;
  std::vector<int> members;  // global ranks by comm rank
  std::vector<int> nodes;    // distinct node indices
  uint64_t seq = 0;          // next collective sequence number
};

// How a rank's trace ends.
struct RankEnd {
  std::vector<trace::OpRecord> pending;  // outstanding at the last flush (true times)
  int64_t last_flush_ns = 0;             // true time of the last flush
  bool crashed = false;                  // died: no shutdown, flushes stop early
  bool killed = false;                   // SIGTERM at the end of a hung job
};

class OpSink {
 public:
  virtual ~OpSink() = default;
  // Ops of one rank arrive in that rank's program order; times are true times.
  virtual void op(int rank, const trace::OpRecord& op) = 0;
};

class SynthModel {
 public:
  explicit SynthModel(const SynthSpec& spec);

  // Runs the whole job; deterministic.  Clears and refills ends() and step_starts().
  void run(OpSink& sink);

  const std::vector<SynthComm>& comms() const { return comms_; }
  // Indices into comms() of the communicators `rank` belongs to, world first.
  const std::vector<int>& comms_of(int rank) const { return comms_of_[static_cast<size_t>(rank)]; }
  int node_of(int rank) const { return rank / ranks_per_node_; }
  int local_rank(int rank) const { return rank % ranks_per_node_; }
  int stage_of(int rank) const { return rank / stage_size_; }
  // Data-parallel replica (index in its data-parallel group) of a rank.
  int replica_of(int rank) const { return (rank % stage_size_) / spec_.tp; }
  // Clock error of a node's CLOCK_REALTIME, ns.
  int64_t clock_offset_ns(int node) const;
  // True time the rank's process started (its clock reference).
  int64_t process_start_ns(int rank) const;
  const std::vector<RankEnd>& ends() const { return ends_; }
  const std::vector<int64_t>& step_starts() const { return step_starts_; }
  int64_t job_end_ns() const { return job_end_ns_; }
  bool hung() const { return hung_; }
  // Compute slowdown of a rank's GPU from straggler/throttle/slow-node faults (1 = healthy).
  double gpu_factor(int rank) const;
  const SynthSpec& spec() const { return spec_; }

 private:
  double gauss(uint64_t a, uint64_t b, uint64_t c) const;
  double uniform(uint64_t a, uint64_t b, uint64_t c) const;
  int64_t chunk_ns(int rank, int step, int slot) const;
  int64_t transfer_ns(const SynthComm& c, trace::OpKind op, uint64_t bytes, int step,
                      uint64_t seq) const;
  int64_t p2p_ns(int a, int b, uint64_t bytes, int step) const;
  double link_factor(const std::vector<int>& nodes) const;
  // Returns false when the job hung at this op (no more ops are issued).  A bucket
  // (overlap) goes on the bucket stream once its gradients are ready (the main
  // stream's time) and leaves the main stream running; any other op follows a
  // compute chunk on the main stream.
  bool collective(OpSink& sink, int comm, trace::OpKind op, uint64_t bytes, int step, int slot,
                  bool bucket = false);
  uint64_t stream_of(int comm, bool bucket) const;
  const Fault* hang_fault() const;

  SynthSpec spec_;
  int ranks_per_node_ = 1;
  int stage_size_ = 1;
  int world_ = 0, chunks_per_step_ = 1;
  std::vector<SynthComm> comms_;
  std::vector<std::vector<int>> comms_of_;
  std::vector<int> tp_comm_, dp_comm_, pp_comm_;  // per rank, -1 if none
  std::vector<int> tp_list_, dp_list_;            // distinct comm indices
  std::vector<int64_t> t_;                        // per-rank main stream time
  std::vector<int64_t> bucket_t_;                 // per-rank bucket stream time (overlap)
  std::vector<uint32_t> send_seq_, recv_seq_;
  std::vector<RankEnd> ends_;
  std::vector<int64_t> step_starts_;
  int64_t job_end_ns_ = 0;
  bool hung_ = false;
};

}  // namespace ringside::analysis::synth
