// ncclCommSplit and ncclCommShrink: a host-side exchange of (colour, key, address)
// over the parent's connections among the participating ranks, then a new mesh.
#pragma once

#include <nccl.h>

#include <memory>
#include <vector>

#include "comm.h"

namespace ringside::sim::nccl {

// `participants`: parent ranks taking part (all for a split; the survivors for a shrink).
ncclResult_t split_comm(Comm& parent, int color, int key, const std::vector<int>& participants,
                        const ncclConfig_t* config, ncclComm_t* newcomm);

}  // namespace ringside::sim::nccl
