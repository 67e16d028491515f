// The terminal summary: verdict, findings ranked by impact with evidence and
// the next command, the what-if line and clock offsets.
#pragma once

#include <ostream>

#include "report/report.h"

namespace ringside::analysis {

void render_text(const Report& report, std::ostream& out, size_t max_findings = 10);

}  // namespace ringside::analysis
