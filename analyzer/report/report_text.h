// The terminal summary: verdict, findings ranked by impact with evidence and
// the next command, the what-if line and clock offsets.
#pragma once

#include <ostream>

#include "report/report.h"

namespace ringside::analysis {

void render_text(const Report& report, std::ostream& out, size_t max_findings = 10);
// One finding, numbered `number`, as the summary shows it.
void render_finding(const Finding& f, size_t number, std::ostream& out);

}  // namespace ringside::analysis
