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
#include <tuple>
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

// A collective's data movement on its ring (SynthSpec::links): comm rank i sends to
// i + 1 (and the last to the first) over a link that takes
// base_ns + per_factor_ns x edge_factor(i's node, i + 1's node), at most the window;
// the op's transfer (`window_ns`, from the last arrival at `start_ns`) is its slowest
// link's time.
struct RingTransfer {
  int comm = 0;            // index into SynthModel::comms()
  uint64_t bus_bytes = 0;  // what each member sends its ring neighbour
  int64_t start_ns = 0;    // true time
  int64_t window_ns = 0;
  double base_ns = 0, per_factor_ns = 0;
};

// A send/recv between two ranks: the link's time is the whole window.
struct PeerTransfer {
  int comm = 0;
  int src = 0, dst = 0;  // global ranks
  uint64_t bytes = 0;
  int64_t start_ns = 0, window_ns = 0;
};

class OpSink {
 public:
  virtual ~OpSink() = default;
  // Ops of one rank arrive in that rank's program order; times are true times.
  virtual void op(int rank, const trace::OpRecord& op) = 0;
  // With SynthSpec::links: each transfer, after the ops it belongs to.
  virtual void ring(const RingTransfer&) {}
  virtual void peer(const PeerTransfer&) {}
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
  // Bandwidth divisor of the path between two nodes (slow_nic, slow_pair; 1 = healthy).
  double edge_factor(int node_a, int node_b) const;
  const SynthSpec& spec() const { return spec_; }

 private:
  double gauss(uint64_t a, uint64_t b, uint64_t c) const;
  double uniform(uint64_t a, uint64_t b, uint64_t c) const;
  int64_t chunk_ns(int rank, int step, int slot) const;
  // The op's transfer on its ring; `ring`, if given, receives its parts.
  int64_t transfer_ns(int comm, trace::OpKind op, uint64_t bytes, int step, uint64_t seq,
                      RingTransfer* ring) const;
  int64_t p2p_ns(int a, int b, uint64_t bytes, int step) const;
  // The slowest edge of a communicator's ring (comm rank order).
  double ring_factor(const SynthComm& c) const;
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
  std::vector<int> tp_comm_, dp_comm_, pp_comm_;          // per rank, -1 if none
  std::vector<int> tp_list_, dp_list_;                    // distinct comm indices
  std::vector<double> nic_factor_;                        // per node
  std::vector<std::tuple<int, int, double>> slow_pairs_;  // node indices, factor
  std::vector<double> ring_factor_;                       // per comm
  std::vector<int64_t> t_;                                // per-rank main stream time
  std::vector<int64_t> bucket_t_;                         // per-rank bucket stream time (overlap)
  std::vector<uint32_t> send_seq_, recv_seq_;
  std::vector<RankEnd> ends_;
  std::vector<int64_t> step_starts_;
  int64_t job_end_ns_ = 0;
  bool hung_ = false;
};

}  // namespace ringside::analysis::synth
