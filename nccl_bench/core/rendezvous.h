// Agreeing on an ncclUniqueId without MPI.
//
//   NCCL_COMM_ID=host:port  every process calls ncclGetUniqueId (NCCL derives the
//                           same id from the variable; rank 0 hosts the bootstrap).
//   --rendezvous FILE       process 0 writes the id to FILE (atomic rename); the
//                           others poll it.  The file carries the job key, so a
//                           stale file from another job is never used.
#pragma once

#include <nccl.h>

#include <string>

#include "core/identity.h"

namespace ringside::bench {

struct RendezvousOptions {
  std::string file;  // --rendezvous FILE, "" if not given
  double timeout_seconds = 300;
};

// Returns the id every process of the job agrees on.  Throws UsageError when no
// rendezvous method is available for a multi-process job.
ncclUniqueId agree_unique_id(const ProcessIdentity& id, const RendezvousOptions& options);

// 64-bit FNV-1a of the id: equal on every rank, used as the trace comm id.
uint64_t hash_unique_id(const ncclUniqueId& uid);

}  // namespace ringside::bench
