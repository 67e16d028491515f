// Which rank files each process of a parallel analysis reads (parallel/process_group.h).
#pragma once

#include <cstdint>
#include <vector>

#include "load/trace_set.h"

namespace ringside::analysis {

// The ranks with a file that process `part` of `parts` reads, ascending: contiguous
// shares of about equal op records, so that the processes finish together and process
// order is rank order.  The same on every process (from the loaded trace set).
std::vector<int64_t> rank_share(const TraceSet& set, int part, int parts);

}  // namespace ringside::analysis
