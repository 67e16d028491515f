// The HTML report: one self-contained file (no network, no server) drawn from
// a report JSON alone, so `ringside report --from report.json --html FILE`
// writes the same page as `ringside analyze DIR --html FILE`.  The page and
// its script live in report/html/report.html; the report is embedded in it.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ringside::analysis {

// The page for `report` (a ringside.report/1 object).
std::string render_html(const nlohmann::json& report);

// `text` safe as HTML text or a quoted attribute value: & < > " ' escaped.
std::string html_escape(std::string_view text);

// `j` as JSON text that cannot end or alter the <script> element it sits in:
// '<', '>', '&' and the line separators U+2028 / U+2029 (which can only occur
// inside strings) are written as \u escapes.  Invalid UTF-8 becomes U+FFFD.
std::string script_safe_json(const nlohmann::json& j);

}  // namespace ringside::analysis
