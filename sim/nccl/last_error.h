// The message behind ncclGetLastError, and NCCL-style warnings on stderr.
#pragma once

#include <nccl.h>

#include <string>

namespace ringside::sim::nccl {

// Records `message` as the last error (process-wide, like NCCL) and returns `code`,
// so error paths read `return fail(ncclInvalidArgument, "...")`. The message is
// also printed on stderr when NCCL_DEBUG is WARN/INFO/TRACE or RINGSIM_DEBUG=1.
ncclResult_t fail(ncclResult_t code, const std::string& message);

// The last recorded error message ("" if none).
std::string last_error();

// True when RINGSIM_DEBUG=1: the sim explains what it does on stderr.
bool debug_enabled();

// One "ringsim nccl: ..." line on stderr when debug_enabled().
void debug_log(const std::string& message);

// One line on stderr, always (conditions the user must see, e.g. a dead peer).
void warn(const std::string& message);

}  // namespace ringside::sim::nccl
