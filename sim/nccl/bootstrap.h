// Bootstrap: what a ncclUniqueId holds, the root service that collects every
// rank's address for one communicator, and building the full mesh of connections.
//
// Without NCCL_COMM_ID, ncclGetUniqueId starts the root service in the calling
// process (as NCCL does) on 127.0.0.1 and an ephemeral port. With
// NCCL_COMM_ID=host:port every rank derives the same id from it, and rank 0 hosts
// the root inside ncclCommInitRank.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "socket_util.h"

namespace ringside::sim::nccl {

// What each rank tells the others about itself.
struct RankInfo {
  int32_t rank = 0;
  int32_t gpu = 0;           // CUDA device ordinal on that node
  int32_t global_rank = -1;  // process_global_rank() or the rank in its first communicator
  int32_t pid = 0;
  uint32_t listen_ip = 0;
  uint16_t listen_port = 0;
  uint16_t pad = 0;
  double slow_factor = 1.0;  // slow_gpu factor of the device (pacing uses the members' max)
  char node_name[64] = {};   // cluster-model node (indices differ between processes)
};

struct UniqueIdContent {
  SocketAddress root;
  uint64_t nonce = 0;  // distinguishes communicators (and their connections)
  bool from_env = false;
};

ncclResult_t make_unique_id(ncclUniqueId* id);
bool decode_unique_id(const ncclUniqueId& id, UniqueIdContent* out);

// Root service for one communicator on an already listening socket (detached thread).
void start_root_service(int listen_fd, uint64_t nonce);
// Starts the root on the NCCL_COMM_ID address (rank 0 with an id from NCCL_COMM_ID).
ncclResult_t start_env_root(const UniqueIdContent& id);

// Sends `me` to the root, receives every rank's info (indexed by rank).
ncclResult_t exchange_with_root(const UniqueIdContent& id, int nranks, const RankInfo& me,
                                std::vector<RankInfo>* all);

// Connects every pair of ranks: connects to lower ranks, accepts from higher ones on
// `listen_fd` (which it closes). fds[rank] = -1 for self.
ncclResult_t build_mesh(int my_rank, const std::vector<RankInfo>& all, int listen_fd,
                        uint64_t nonce, std::vector<int>* fds);

// A listening socket for this rank's incoming mesh connections.
ncclResult_t open_rank_listener(int* fd, SocketAddress* addr);

}  // namespace ringside::sim::nccl
