// The fleet view as JSON (schema ringside.fleet/1, docs/report-format.md) and
// as text for a terminal.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "fleet/fleet.h"

namespace ringside::analysis::fleet {

nlohmann::json fleet_json(const FleetSummary& s);
void render_fleet_text(const FleetSummary& s, size_t top, std::ostream& out);

}  // namespace ringside::analysis::fleet
