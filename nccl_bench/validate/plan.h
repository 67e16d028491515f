// Which node pairs the inter-node tests measure, round by round.  Pairs within a
// round are disjoint, so a round runs all its pairs at once.
//
//   ring_rounds:      each node with its successor (a ring): 2 rounds (3 if the
//                     node count is odd).  A slow node shows as its two pairs slow,
//                     a slow link as one pair slow.
//   all_pairs_rounds: every pair, round-robin (circle method): N-1 rounds for even
//                     N, N for odd N.
#pragma once

#include <utility>
#include <vector>

namespace ringside::bench {

using NodePair = std::pair<int, int>;  // node indices, first < second

struct Round {
  std::vector<NodePair> pairs;
};

std::vector<Round> ring_rounds(int nnodes);
std::vector<Round> all_pairs_rounds(int nnodes);

}  // namespace ringside::bench
