// The built-in floor table: minimum GB/s per GPU model (the CUDA device name) and
// link class, in the baseline file's format (docs/nccl_bench.md, "Floor table"),
// so that one node is judged without peers.  A --baseline file overrides it entry
// by entry; --no-default-floors leaves it out.
#pragma once

#include "validate/baseline.h"

namespace ringside::bench {

Baseline default_floors();

}  // namespace ringside::bench
