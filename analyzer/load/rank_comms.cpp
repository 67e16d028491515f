#include "load/rank_comms.h"

namespace ringside::analysis {

RankComms::Entry RankComms::find(uint64_t comm_id) {
  if (seen_.size() <= kShort) {
    for (size_t i = 0; i < seen_.size(); ++i) {
      if (seen_[i].first == comm_id) return seen_[last_ = i].second;
    }
  } else if (auto it = where_.find(comm_id); it != where_.end()) {
    return seen_[last_ = it->second].second;
  }
  Entry e;
  if (auto it = set_.comm_index.find(comm_id); it != set_.comm_index.end()) {
    e.index = it->second;
    e.me = set_.comm_rank_of(set_.comms[static_cast<size_t>(e.index)], rank_);
  }
  seen_.emplace_back(comm_id, e);
  last_ = seen_.size() - 1;
  if (seen_.size() > kShort) {
    // Every id in the map once the list is no longer looked through.
    for (size_t i = where_.size(); i < seen_.size(); ++i) where_.emplace(seen_[i].first, i);
  }
  return seen_.back().second;
}

}  // namespace ringside::analysis
