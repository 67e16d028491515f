// Whether a poll may reuse the last poll's analysis: every trace file of the
// directory is exactly as when that analysis began (same names, and the same
// trace::FileStamp: inode, size, modification and change times).  The analysis
// is a function of the files' contents alone, so its report would be the same.
//
// Time stamps have a granularity (a clock tick, up to a second or two on some
// file systems): a write in the same tick as the one before it leaves the stamp
// as it was.  A file therefore counts as unchanged only if its stamp was
// already seen kSettle before the reused analysis began: a write after that
// moment falls in a later tick.  Only this process's monotonic clock is used,
// never the file times against it (the writer's host, or a file server, keeps
// its own clock).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "ringside/file_stamp.h"

namespace ringside::analysis::watch {

class UnchangedTraces {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kSettle{2};

  // Stamps every trace file (ringside-*.h5) of `dir` at `now`; true when they are
  // those of the last analysis (analyzed()) and had settled before it began.  A
  // file that cannot be examined counts as changed.
  bool check(const std::string& dir, Clock::time_point now = Clock::now());
  // The analysis of the files as the last check() saw them began after it.
  void analyzed();

  uint64_t polls_reused() const { return reused_; }

 private:
  struct Seen {
    trace::FileStamp stamp;
    Clock::time_point since;  // when this stamp was first seen
  };
  std::map<std::string, Seen> seen_;  // by path, at the last check
  bool seen_whole_ = false;           // every file of the last check could be examined
  Clock::time_point checked_at_{};
  // The stamps the last analysis read, and when it began.
  std::map<std::string, Seen> analyzed_;
  std::optional<Clock::time_point> analyzed_at_;
  uint64_t reused_ = 0;
};

}  // namespace ringside::analysis::watch
