// The collectives around each finding, rank by rank, for the HTML report's
// timeline: a few consecutive ops of one communicator and, for a few of its
// members (the finding's ranks first), when each arrived and when it ended.
// Bounded: at most kMaxTimelines findings x kTimelineOps ops x kTimelineLanes
// ranks, read from those ranks' files only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "detect/context.h"
#include "report/report.h"

namespace ringside::analysis {

inline constexpr size_t kMaxTimelines = 4;
inline constexpr uint64_t kTimelineOps = 10;
inline constexpr size_t kTimelineLanes = 16;

struct TimelineOp {
  uint64_t seq = 0;
  uint8_t op = 0;
  uint64_t bytes = 0;
  int64_t last_rank = -1;  // the member that arrived last, -1 if unknown
  // Per lane, seconds since the job's first op; NaN: no such record (never
  // arrived, or never ended).
  std::vector<double> arrival_s, end_s;
};

struct FindingTimeline {
  size_t finding = 0;             // index into the report's findings
  int comm = -1;                  // comm index
  std::vector<int64_t> lanes;     // global ranks
  std::optional<uint64_t> stuck;  // the op a hang or desync stopped at
  std::vector<TimelineOp> ops;    // ascending seq
};

// Chooses the ops and lanes of each finding that names ranks with traces (at most
// kMaxTimelines; not missing_trace)
// and reads them.  Hangs and desyncs: the ops up to the one they stopped at; others:
// the window of the finding's busiest communicator where its ranks arrived last
// most often.  Unreadable files leave their lanes empty.
std::vector<FindingTimeline> finding_timelines(const Context& ctx,
                                               const std::vector<Finding>& findings, size_t batch);

}  // namespace ringside::analysis
