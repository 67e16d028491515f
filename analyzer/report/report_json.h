// The JSON report, schema "ringside.report/1" (docs/report-format.md).
#pragma once

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace ringside::analysis {

nlohmann::json report_to_json(const Report& report);

}  // namespace ringside::analysis
