// The lowest sequence numbers among one file's window of op rows, kept as the window
// slides: rows are appended at its end and leave at its front.
//
// Where a window starts (load/op_window.h) depends on the lowest collective sequence
// number of each communicator, and the lowest per-peer sequence number of each send/recv
// direction, among each rank's window rows.  Found by scanning the window, a watch poll
// reads every held row for them (4096 per rank by default) though only a few rows were
// appended since the poll before.  Kept here instead, per communicator and direction, as
// the rows whose number no later row undercuts (a monotonic queue): appending a row drops
// those after it that it undercuts, a row leaving the window leaves the front, and the
// lowest is the front.  The result is the scan's, in any order of the rows.  Sequence
// numbers mostly rise with the rows, and then the queues hold every row: 16 bytes a held
// row (64 MiB for 1024 ranks' windows of 4096 rows), where the scan read 96.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <tuple>
#include <unordered_map>

#include "load/op_window.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

class SlidingLowest {
 public:
  // Rows `first` on of the file (`rows[0]` is row `first`) are appended: they follow the
  // rows held.
  void append(uint64_t first, std::span<const trace::OpRecord> rows);
  // Rows before `first` left the window.
  void drop_before(uint64_t first);
  // Notes the lowest numbers in `firsts` as WindowFirsts::note would for each row:
  // `me_in`, the rank's comm rank by comm id (send/recv of a communicator without one
  // is not noted).
  void note(const std::unordered_map<uint64_t, int32_t>& me_in, WindowFirsts& firsts) const;

 private:
  struct Entry {
    uint64_t row, value;
  };
  using Queue = std::deque<Entry>;
  static void push(Queue& q, uint64_t row, uint64_t value);
  std::unordered_map<uint64_t, Queue> collectives_;  // by comm id
  // Send/recv by (comm id, is a send, peer): its direction once the rank's comm rank is known.
  std::map<std::tuple<uint64_t, bool, int32_t>, Queue> p2p_;
};

}  // namespace ringside::analysis
