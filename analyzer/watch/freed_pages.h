// Memory a watch poll frees, kept for the next poll.
//
// Every poll allocates about what the one before it freed: each rank's own-compute
// timeline, the per-op table, the buffers of the reads.  The allocator (jemalloc where the
// build found it, cmake/RingsideDeps.cmake) hands freed pages back to the kernel over its
// decay time, 10 s by default: over the polls of a few seconds each, most of a poll's
// memory went back and was faulted in again by the next one, page by page, and each hand
// back flushed the page tables of every core the process had run on.  On a 1024-rank job
// that was a quarter of a poll's CPU (docs/analyzer.md, "Watch").
#pragma once

namespace ringside::analysis::watch {

// Keeps the pages the process frees for about `seconds` before the allocator returns them
// to the kernel, in every arena it has and will make.  False where the allocator has no
// such setting (the C library's malloc): nothing changes then.
bool keep_freed_pages(double seconds);

}  // namespace ringside::analysis::watch
