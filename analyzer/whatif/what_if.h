// What-if attribution: the job's actual time vs. its time with each diagnosed
// slowdown removed.  A finding's cost is the time its culprits made the others
// wait beyond what they themselves waited (measured per op, see rank_stats.h)
// or, for links, the transfer time above the reference bandwidth of transfers
// that overlapped none of the rank's other ops (exposed time only).  Costs of
// independent causes add up; the total is capped by the time a typical rank
// spent inside communication calls (overlapping ops counted once), so the
// ideal time never drops below the job's time outside them.
#pragma once

#include "detect/context.h"
#include "report/report.h"

namespace ringside::analysis {

WhatIf compute_what_if(const Context& ctx, const std::vector<Finding>& findings);

}  // namespace ringside::analysis
