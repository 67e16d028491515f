// What `ringside diff` compares: a report JSON, or a trace directory that is
// analyzed first (the same analysis as `ringside analyze`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ringside/status.h"

namespace ringside::analysis {

// Errors name the path: missing, unreadable, not JSON, not a ringside report,
// or what analyzing the directory rejects.
Result<nlohmann::json> load_diff_input(const std::string& path);

}  // namespace ringside::analysis
