// What-if attribution: the job's actual time vs. its time with each diagnosed
// slowdown removed.  A finding's cost is the time its culprits made the others
// wait beyond what they themselves waited (measured per op, see rank_stats.h)
// or, for links, the transfer time above the peers' bandwidth.  Costs of
// independent causes add up; the total is capped below the actual time.
#pragma once

#include "detect/context.h"
#include "report/report.h"

namespace ringside::analysis {

WhatIf compute_what_if(const Context& ctx, const std::vector<Finding>& findings);

}  // namespace ringside::analysis
