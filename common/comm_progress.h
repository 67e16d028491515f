// The writer's running account of where each communicator stands, from the op
// rows it appends and the /pending snapshot of each flush: at a flush it yields
// the /progress rows of the communicators whose progress changed since the
// previous one.  Work per op is one lookup among the file's communicators; rows
// are produced once per flush.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ringside/trace_schema.h"

namespace ringside::trace {

class CommProgress {
 public:
  // Ops appended to /ops.
  void note_rows(std::span<const OpRecord> ops);
  // The rows of a flush with index `flush_index` at time `t_ns`, given the ops
  // outstanding then: one per communicator whose row differs from the last one
  // written, appended to `out`.
  void flush_rows(std::span<const OpRecord> pending, int64_t t_ns, uint64_t flush_index,
                  std::vector<ProgressRecord>& out);

 private:
  struct Comm {
    ProgressRecord now{};      // t_ns and flush_index unused
    ProgressRecord written{};  // as last written (same fields)
    bool ever_written = false;
  };
  Comm& comm(uint64_t id);
  std::vector<Comm> comms_;  // few per file: searched linearly
};

}  // namespace ringside::trace
