// File-level attributes of a trace (RINGSIDE_META_FIELDS in trace_schema.h).
#pragma once

#include <cstdint>
#include <string>

#include "ringside/trace_schema.h"

namespace ringside::trace {

#define RINGSIDE_META_TYPE_Int int64_t
#define RINGSIDE_META_TYPE_Str std::string
#define RINGSIDE_META_TYPE_OptStr std::string
#define RINGSIDE_DECLARE_META(kind, name, desc) RINGSIDE_META_TYPE_##kind name{};

struct TraceMeta {
  RINGSIDE_META_FIELDS(RINGSIDE_DECLARE_META)
};

#undef RINGSIDE_DECLARE_META

// Fills clock_realtime_ns / clock_monotonic_ns with the current clocks.
void stamp_clock_reference(TraceMeta& meta);

// CLOCK_MONOTONIC now, in ns.  Trace times are this minus clock_monotonic_ns.
int64_t monotonic_now_ns();

}  // namespace ringside::trace
