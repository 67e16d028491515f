// The run's profile: what `ringside diff` compares between two runs, written
// into the report as `profile` (docs/report-format.md) so that a report JSON
// can be diffed without its traces.  Bounded whatever the job's length: step
// times and bandwidths are kept as summaries plus a sample of at most
// kProfileSample (bandwidths: kProfileBusbwSample) values; per-rank arrays stop at kProfileMaxRanks
// ranks.
#pragma once

#include <cstddef>
#include <span>
#include <nlohmann/json.hpp>

#include "load/trace_set.h"
#include "match/group_table.h"
#include "match/rank_stats.h"

namespace ringside::analysis {

inline constexpr const char* kProfileSchema = "ringside.profile/1";
inline constexpr size_t kProfileSample = 256;
inline constexpr size_t kProfileMaxRanks = 16384;
inline constexpr size_t kProfileMaxComms = 4096;
inline constexpr size_t kProfileMaxBusbw = 256;
// Bandwidth entries keep a smaller sample: there can be 256 of them.
inline constexpr size_t kProfileBusbwSample = 32;

// A communicator's identity across runs: its role and members (global ranks
// by comm rank), never its id (a fresh unique id every run) or its label (holds
// node names, which change when a node is swapped).
std::string comm_shape_key(const CommInfo& c);

// The step: the repeating pattern of (op, bytes) on the widest communicator;
// the number of its ops per step, 0 when no pattern repeats.
size_t ops_per_step(std::span<const GroupAgg> groups);

nlohmann::json build_run_profile(const TraceSet& set, const GroupTable& table,
                                 const RankStatsPass& stats);

}  // namespace ringside::analysis
