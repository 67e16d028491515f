// Helpers shared by the trace tests: temp dirs and deterministic records.
#pragma once

#include <cstdint>
#include <string>

#include "ringside/trace_meta.h"
#include "ringside/trace_schema.h"

namespace ringside::trace::testing {

std::string make_temp_dir(const std::string& tag);
TraceMeta sample_meta(const std::string& job, int64_t rank, int64_t world);
// Record i of a deterministic, realistic-looking sequence.
OpRecord make_op(uint64_t i);
SampleRecord make_sample(uint64_t i);
EventRecord make_event(uint64_t i);
CommRecord make_comm(uint64_t i);

}  // namespace ringside::trace::testing
