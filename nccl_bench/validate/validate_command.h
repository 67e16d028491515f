// `nccl_bench validate`: node and link validation over a whole allocation.
#pragma once

namespace ringside::bench {

// argv[1] == "validate".  Returns the exit code (0 all pass, 1 any fail);
// throws UsageError/RuntimeError for exit code 2.
int run_validate(int argc, char** argv);

}  // namespace ringside::bench
