// The communicator: membership, connections, sequence counters, and lifecycle
// (init, finalize, destroy, abort). The public ncclComm_t handle owns a shared_ptr
// so that operations still queued on streams keep the communicator alive.
#pragma once

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap.h"
#include "cluster.h"
#include "transport.h"

namespace ringside::sim::nccl {

struct CustomRedOp {
  bool in_use = false;
  ncclDataType_t dtype = ncclFloat32;
  double scalar = 1.0;                  // ncclScalarHostImmediate
  const void* device_scalar = nullptr;  // ncclScalarDevice: read when the op runs
};

class Comm {
 public:
  // Identity and membership.
  int rank = 0;
  int nranks = 0;
  int device = 0;
  int comm_index = 0;    // order of creation in this process (fault numbering)
  int global_rank = -1;  // this process's global rank (faults)
  uint64_t nonce = 0;
  bool blocking = true;
  std::vector<RankInfo> members;
  std::vector<std::string> node_names;  // cluster-model node of each member
  Endpoint endpoint(int r) const { return Endpoint{node_names[r], members[r].gpu}; }
  double slow_factor = 1.0;  // max slow_gpu factor over members

  std::shared_ptr<CommLinkState> link = std::make_shared<CommLinkState>();
  std::vector<std::shared_ptr<Connection>> conns;  // by rank; null for self

  // Issue-side counters (host threads), guarded by issue_mu.
  std::mutex issue_mu;
  uint64_t coll_seq = 0;
  uint64_t ctrl_seq = 0;
  int64_t op_count = 0;
  std::vector<uint64_t> send_seq, recv_seq;
  std::vector<CustomRedOp> redops;

  // Init state: ncclInProgress while a non-blocking init runs.
  std::atomic<int> init_state{ncclInProgress};
  std::mutex init_mu;
  std::condition_variable init_cv;

  // Ops enqueued and not yet finished on their streams.
  std::mutex inflight_mu;
  std::condition_variable inflight_cv;
  int inflight = 0;

  // The profiler plugin's context (profiler.h); live between its init and finalize.
  void* profiler_context = nullptr;
  std::atomic<bool> profiler_live{false};

  std::atomic<bool> finalized{false};
  std::atomic<bool> closed{false};

  std::string label() const;
  // Waits until init finished; returns its result.
  ncclResult_t wait_ready();
  // The asynchronous state: init progress, then the first remote error.
  ncclResult_t async_state();
  void op_started();
  void op_finished();
  void wait_idle();
  // Says goodbye to every peer (after wait_idle) / tears connections down now.
  void close_connections();
  void abort_now();
};

// Sets up `comm` (rank, nranks, nonce, device filled in) from a table of members:
// builds the mesh on `listen_fd`, creates connections and the topology.
ncclResult_t connect_comm(Comm& comm, const std::vector<RankInfo>& all, int listen_fd);

// This rank's RankInfo (without listen address) for a device.
RankInfo local_rank_info(int rank, int device);

// Initialises a new communicator from a unique id (blocking).
ncclResult_t init_from_id(Comm& comm, const ncclUniqueId& id);

// Assigns the process-wide creation index and global rank to a new communicator.
void register_new_comm(Comm& comm);

}  // namespace ringside::sim::nccl

// The opaque handle behind ncclComm_t.
struct ncclComm {
  std::shared_ptr<ringside::sim::nccl::Comm> impl;
};
