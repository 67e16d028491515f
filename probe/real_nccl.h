// Finding the real NCCL behind the probe: `pncclX` (NCCL's strong profiling
// alias) first, else `ncclX`, searching the libraries loaded after the probe
// (RTLD_NEXT) and then an already loaded libnccl.so.2 (NCCL loaded privately
// by a dlopen'd framework library).
#pragma once

#include <nccl.h>

#include "nccl_api.h"

namespace ringside::probe {

// The real function for `api`, or nullptr (a one-time warning says so).
void* resolve_nccl(Api api) noexcept;

// What a wrapper returns when the real function does not exist.
ncclResult_t missing_nccl_function(Api api) noexcept;

// Real query functions the probe itself calls (never its own wrappers).
struct RealNccl {
  decltype(&pncclCommCount) CommCount = nullptr;
  decltype(&pncclCommUserRank) CommUserRank = nullptr;
  decltype(&pncclCommCuDevice) CommCuDevice = nullptr;
  decltype(&pncclGetVersion) GetVersion = nullptr;
};
const RealNccl& real_nccl() noexcept;

}  // namespace ringside::probe
