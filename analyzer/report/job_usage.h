// What the job used: GPUs, nodes, wall time, GPU-hours and how busy its GPUs
// were (NVML utilization samples), as the report's `usage` object.  Bounded:
// a few numbers per job, so that `ringside fleet` reads reports, not traces.
#pragma once

#include <nlohmann/json.hpp>

#include "detect/context.h"
#include "load/trace_set.h"

namespace ringside::analysis {

nlohmann::json job_usage(const TraceSet& set, const Context& ctx);

}  // namespace ringside::analysis
