// Clock alignment across nodes.  A collective without a root (all-reduce,
// all-gather, reduce-scatter, all-to-all) completes at nearly the same instant on
// all its members, so the difference of two members' recorded end times of the
// same (comm, seq) is their clock difference plus small noise.  Rooted ones do
// not (a broadcast ends on its root first) and are not used.
// Ranks of a host share its clock, so the unknowns are one offset per node.
// Per (rank, comm) whose lowest rank is on another node, the median of those
// differences is one estimate of o_node(r) - o_node(ref); per pair of nodes the
// median of the estimates is one equation, and the equations are solved by
// robust (Huber-reweighted) sparse least squares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/trace_set.h"

namespace ringside::analysis {

struct NodeOffset {
  std::string node;
  double offset_ms = 0;  // node clock minus the reference node's clock
  int ranks = 0;
};

struct ClockAlignment {
  std::vector<NodeOffset> nodes;
  int equations = 0;
  bool aligned = false;  // false: no unrooted collective spans nodes, offsets left at 0
  double max_abs_offset_ms = 0;
  std::string reference_node;  // the node of the first rank with a trace: offset 0
  // Nodes that share no unrooted collective with the reference node, directly or through
  // other nodes: their offsets cannot be estimated and are left at 0.
  std::vector<std::string> unaligned_nodes;
};

// Estimates and stores RankInfo::offset_ns for every rank with a file.
ClockAlignment align_clocks(TraceSet& set);

}  // namespace ringside::analysis
