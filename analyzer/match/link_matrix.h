// The link matrix: what NCCL reported per peer through the probe's profiler
// plugin (/links), as directed rank-to-rank links (overall and per communicator)
// and node-to-node links.  Between nodes, a link's bandwidth is what the network
// achieved while it transmitted (the sender's SendWait time, channels in
// parallel), so a link that waits for a slow peer or GPU is not called slow; the
// wait shares say where the rest of its time went.  Inside a node it comes from
// the GPU kernel channels of send/recv tasks (source 1): their time also holds
// the wait for the peer, so the fastest channel of either side is what counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::analysis {

struct TraceSet;

struct RankLink {
  int64_t src = -1, dst = -1;  // global ranks: sender, receiver
  int src_node = -1, dst_node = -1;
  uint64_t ops = 0;    // NCCL ops that moved data on it (on its busiest channel)
  uint64_t bytes = 0;  // sent
  double gbps = 0;     // bytes per ns while transmitting, summed over parallel channels; 0: unknown
  double net_s = 0;    // the sender's time transmitting (bytes / gbps)
  // What its fastest steps (>= 64 KiB) reached, channels in parallel; 0: unknown.
  // Waiting behind earlier steps or a busy host only ever adds time, so this is
  // what the link can do, where gbps is what it did on average.
  double best_gbps = 0;
  // Shares of the network proxy's step time (-1: unknown, as inside a node).
  double peer_wait = -1;  // sender: share of step time waiting for the receiver's credit
  double gpu_wait = -1;   // sender: share of step time waiting for its GPU's data
  double recv_wait = -1;  // receiver: share of step time awaiting data (-1: no receiver rows)
};

struct CommLinks {
  int comm = -1;  // index into TraceSet::comms
  uint64_t id = 0;
  std::string label;
  std::vector<RankLink> links;
};

struct NodeLink {
  int src_node = -1, dst_node = -1;
  int links = 0;  // rank links measured between them
  uint64_t bytes = 0;
  double gbps = 0;        // median over its rank links
  double min_gbps = 0;    // the slowest of them
  double best_gbps = 0;   // median of their best_gbps
  double peer_wait = -1;  // mean of its rank links' sender peer-wait shares
};

struct LinkMatrix {
  std::vector<RankLink> rank_links;  // every communicator pooled, sorted by (src, dst)
  std::vector<CommLinks> per_comm;
  std::vector<NodeLink> node_links;
  // NCCL communicators whose rows could not be placed: no traced communicator
  // has these ranks at these positions (or two disagree on a peer).
  int unplaced_comms = 0;
  bool observed() const { return !rank_links.empty(); }
  // Some GPU-to-GPU path inside a node was timed (kernel channels of send/recv).
  bool intra_node_observed() const {
    for (const RankLink& l : rank_links)
      if (l.src_node == l.dst_node) return true;
    return false;
  }
};

// After the communicators' roles and labels are known (match/comm_roles.h).
LinkMatrix build_link_matrix(const TraceSet& set);

// What the report says of links: where its observations came from, and the matrix.
struct LinkSummary {
  // "nccl_profiler": per-peer plugin events; "send_recv": timed send/recv pairs only;
  // "none": links were not observed (nothing says they are fine).
  std::string source = "none";
  LinkMatrix matrix;
};

}  // namespace ringside::analysis
