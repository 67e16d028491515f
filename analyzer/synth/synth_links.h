// The /links rows of `ringside synth --links`, as the probe's NCCL profiler plugin
// writes them: per rank, one row per (communicator, peer, channel, direction) and
// flush window, from the model's transfers between nodes (NCCL's network proxy
// reports no others).  Shaped as the sim's NCCL reports them (docs/sim.md): a ring
// collective's transfers share the op's window, so a link faster than the ring's
// slowest spends the rest of it waiting for its peer; a transfer over 64 KiB runs
// on two channels that share the link; a receive waits in the network for its
// whole window.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "ringside/trace_schema.h"
#include "synth/synth_model.h"

namespace ringside::analysis::synth {

class LinkRows {
 public:
  // Rows for the ranks in [lo, hi).
  LinkRows(const SynthModel& model, int lo, int hi);

  void ring(const RingTransfer& t);
  void peer(const PeerTransfer& t);
  // The rows of `rank`'s flush windows that ended; with `end_true_ns` (its last
  // flush) also those of the window still open.  Times are the rank's own.
  std::vector<trace::LinkRecord> take(int rank, int64_t end_true_ns = -1);
  // The rows of `rank`'s flush windows that ended by true time `until_true_ns` (a
  // flush then, while the job grows); the later ones are kept for later takes.
  std::vector<trace::LinkRecord> take_until(int rank, int64_t until_true_ns);

 private:
  struct Rank {
    int64_t window_end = 0;  // true time
    std::map<std::tuple<uint64_t, int32_t, uint8_t, uint8_t>, trace::LinkRecord> open;
    std::vector<trace::LinkRecord> closed;
  };
  // Adds one channel's share of a transfer that ends at `end_ns` (true time).
  void add(int rank, int comm, int comm_rank, int peer_comm_rank, bool send, uint64_t bytes,
           int64_t window_ns, int64_t link_ns, int64_t end_ns);
  void close_window(int rank, Rank& r);

  const SynthModel& model_;
  int lo_, hi_;
  std::vector<Rank> ranks_;
};

}  // namespace ringside::analysis::synth
