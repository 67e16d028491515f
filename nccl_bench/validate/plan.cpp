#include "validate/plan.h"

#include <algorithm>

namespace ringside::bench {

namespace {
NodePair ordered(int a, int b) {
  return a < b ? NodePair{a, b} : NodePair{b, a};
}
}  // namespace

std::vector<Round> ring_rounds(int n) {
  std::vector<Round> rounds;
  if (n < 2) return rounds;
  if (n == 2) return {Round{{{0, 1}}}};
  Round even, odd, last;
  for (int i = 0; i < n; ++i) {
    const NodePair p = ordered(i, (i + 1) % n);
    if (n % 2 == 1 && i == n - 1) {
      last.pairs.push_back(p);  // (n-1, 0) meets (0, 1) of the even round
    } else if (i % 2 == 0) {
      even.pairs.push_back(p);
    } else {
      odd.pairs.push_back(p);
    }
  }
  rounds.push_back(even);
  rounds.push_back(odd);
  if (!last.pairs.empty()) rounds.push_back(last);
  return rounds;
}

std::vector<Round> all_pairs_rounds(int n) {
  std::vector<Round> rounds;
  if (n < 2) return rounds;
  // Circle method on an even number of seats; seat n (odd n) is a bye.
  const int seats = n % 2 == 0 ? n : n + 1;
  const int m = seats - 1;
  for (int r = 0; r < m; ++r) {
    Round round;
    for (int i = 0; i < seats / 2; ++i) {
      const int a = i == 0 ? m : (r + i) % m;
      const int b = (r - i + m) % m;
      if (a < n && b < n) round.pairs.push_back(ordered(a, b));
    }
    std::sort(round.pairs.begin(), round.pairs.end());
    rounds.push_back(round);
  }
  return rounds;
}

}  // namespace ringside::bench
