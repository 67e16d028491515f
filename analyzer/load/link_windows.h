// A rank file's /links rows summed over their flush windows, as they are read: one
// row per (NCCL comm, rank, peer, channel, direction, source), so network proxy rows
// and kernel channel rows of one peer stay apart; t_ns is the last window's, and the
// best step the median window's fastest (one step timed wrong, a clock read delayed by
// preemption, does not set it).  The median is of at most kKeptBests windows spread
// evenly over the job: every window while there are fewer, then every second one,
// every fourth... (a link gets a window per flush, 3600 in an hour of a job: held and
// sorted at every watch poll, they were most of its memory and a twentieth of its CPU).  `ringside
// analyze` sums a file's rows at once; `ringside watch` keeps the sums between polls
// (RankTablesCache) and adds the rows appended since, instead of reading the whole table again at
// every poll.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "ringside/trace_schema.h"

namespace ringside::analysis {

inline constexpr size_t kKeptBests = 256;

class LinkWindowSums {
 public:
  void add(std::span<const trace::LinkRecord> rows);
  // The sums so far.
  std::vector<trace::LinkRecord> summed() const;
  uint64_t rows() const { return rows_; }  // rows added so far
  size_t kept_bests() const;               // window best steps held, over every link

 private:
  using Key = std::tuple<uint64_t, int32_t, int32_t, int32_t, uint8_t, uint8_t, uint8_t>;
  std::map<Key, size_t> where_;  // row of sums_
  std::vector<trace::LinkRecord> sums_;
  // Per row of sums_: the fastest step (bytes, ns) of the windows numbered (among those
  // that had one) by a multiple of `stride`.
  struct Bests {
    std::vector<std::pair<uint64_t, int64_t>> kept;
    uint64_t seen = 0;
    uint64_t stride = 1;
    void offer(uint64_t bytes, int64_t ns);
  };
  std::vector<Bests> bests_;
  uint64_t rows_ = 0;
};

std::vector<trace::LinkRecord> sum_link_windows(std::span<const trace::LinkRecord> rows);

}  // namespace ringside::analysis
