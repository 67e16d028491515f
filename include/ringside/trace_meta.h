// File-level attributes of a trace (RINGSIDE_META_FIELDS in trace_schema.h).
#pragma once

#include <cstdint>
#include <ctime>
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

// `clock` now, in ns.  Inline: the probe reads it on every NCCL call.
inline int64_t clock_now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_MONOTONIC now, in ns.  Trace times are this minus clock_monotonic_ns.
inline int64_t monotonic_now_ns() {
  return clock_now_ns(CLOCK_MONOTONIC);
}

}  // namespace ringside::trace
