// How long the process's threads have waited for a CPU: the run-queue delay the
// kernel accounts per thread (/proc/self/task/<tid>/schedstat, second field),
// summed over the threads alive now.  A host with more runnable threads than
// cores delays every thread that wakes up (a compute kernel's host callback, a
// launch, a sleep that ends): the analyzer tells that apart from uneven work.
#pragma once

#include <cstdint>

namespace ringside::probe {

// Nanoseconds, or 0 when the kernel does not provide schedstat (then unknown).
int64_t process_run_delay_ns();

}  // namespace ringside::probe
