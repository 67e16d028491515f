// Clock alignment across nodes.  A collective completes at nearly the same
// instant on all its members, so the difference of two members' recorded end
// times of the same (comm, seq) is their clock difference plus small noise.
// Per (rank, comm) the median of those differences against the comm's lowest
// rank gives one equation o_r - o_ref = d; the equations of all comms are
// solved by robust (Huber-reweighted) sparse least squares, then each node
// takes the median offset of its ranks (ranks of a host share its clock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/trace_set.h"

namespace ringside::analysis {

struct NodeOffset {
  std::string node;
  double offset_ms = 0;  // node clock minus the reference node's clock
  double spread_ms = 0;  // disagreement among the node's ranks (quality)
  int ranks = 0;
};

struct ClockAlignment {
  std::vector<NodeOffset> nodes;
  int equations = 0;
  bool aligned = false;  // false: no shared collectives, offsets left at 0
  double max_abs_offset_ms = 0;
};

// Estimates and stores RankInfo::offset_ns for every rank with a file.
ClockAlignment align_clocks(TraceSet& set);

}  // namespace ringside::analysis
