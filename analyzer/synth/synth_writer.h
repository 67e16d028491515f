// Writes the traces of a SynthModel run through the trace library, one file
// per rank, exactly as the probe would (metadata, comms, ops, GPU samples,
// events, flushes with /pending snapshots).
#pragma once

#include <functional>

#include "ringside/status.h"
#include "synth/synth_spec.h"

namespace ringside::analysis::synth {

struct SynthSummary {
  int files = 0;
  uint64_t ops = 0;
  bool hung = false;
  double job_seconds = 0;
};

// progress(done_ranks, total_ranks) is called after each batch of ranks; with
// spec.grow_steps, grown(steps_written, steps) after each round of steps written to every
// file.
Result<SynthSummary> write_synth_traces(const SynthSpec& spec,
                                        const std::function<void(int, int)>& progress = {},
                                        const std::function<void(int, int)>& grown = {});

}  // namespace ringside::analysis::synth
