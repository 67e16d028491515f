// Loading a trace directory split across the processes of a parallel analysis
// (parallel/process_group.h): each checks a contiguous share of the candidate files
// and reads a share of the rank files, and every process receives what all of them
// found, in file order, so each builds the trace set one process would.
#pragma once

#include <functional>
#include <vector>

#include "load/rank_file.h"
#include "parallel/process_group.h"
#include "progress.h"
#include "ringside/trace_reader.h"

namespace ringside::analysis {

struct LoadOptions;

// The listing's file checks (trace::check_trace_files), a share in each process.
trace::CheckTraceFiles check_files_across(ProcessGroup& group);

// Reads a share of `files` (read_rank_file) and hands every file's reading, this
// process's and the others', to `join` in the order of `files`.  Collective.
void read_rank_files_across(ProcessGroup& group, const std::vector<trace::TraceDirEntry>& files,
                            int64_t world_size, const LoadOptions& options, Progress& progress,
                            const std::function<void(RankFile&&)>& join);

}  // namespace ringside::analysis
