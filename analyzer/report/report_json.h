// The JSON report, schema "ringside.report/1" (docs/report-format.md).
#pragma once

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace ringside::analysis {

nlohmann::json report_to_json(const Report& report);
// One finding as it appears in the report's `findings` list.
nlohmann::json finding_to_json(const Finding& finding);
// `j` as text (indented by `indent`, one line if negative); bytes that are not
// valid UTF-8 (file names) become U+FFFD instead of an exception.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace ringside::analysis
