// One rank's communicators by id, for a pass over its ops: a rank's ops are on a
// handful of communicators, so each one's index in the trace set and the rank's
// place in it are looked up once, not hashed (and its members searched) per op.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "load/trace_set.h"

namespace ringside::analysis {

class RankComms {
 public:
  struct Entry {
    int index = -1;   // in TraceSet::comms; -1: no communicator of the set has the id
    int32_t me = -1;  // the rank's comm rank; -1: not a member (or index -1)
  };
  RankComms(const TraceSet& set, int64_t rank) : set_(set), rank_(rank) {}
  Entry of(uint64_t comm_id) {
    // Consecutive ops are mostly on the same communicator: that one is answered inline.
    if (last_ < seen_.size() && seen_[last_].first == comm_id) return seen_[last_].second;
    return find(comm_id);
  }

 private:
  Entry find(uint64_t comm_id);

  // Looked through in order while short; past that (a rank on many communicators),
  // found by a map of positions in `seen_`.
  static constexpr size_t kShort = 16;
  const TraceSet& set_;
  int64_t rank_;
  std::vector<std::pair<uint64_t, Entry>> seen_;
  std::unordered_map<uint64_t, size_t> where_;
  size_t last_ = 0;
};

}  // namespace ringside::analysis
