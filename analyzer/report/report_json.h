// The JSON report, schema "ringside.report/1" (docs/report-format.md).
#pragma once

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace ringside::analysis {

nlohmann::json report_to_json(const Report& report);
// One finding as it appears in the report's `findings` list.
nlohmann::json finding_to_json(const Finding& finding);

}  // namespace ringside::analysis
