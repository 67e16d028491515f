// The time an op takes on the device, and what NCCL's network proxy reports of it
// to a profiler plugin.  NCCL reports proxy ops only for the network transport:
// here, one ProxyOp per channel for every peer on another node that the op's
// algorithm sends to or receives from (ring neighbours, the chain of a broadcast
// or reduce, every peer of an alltoall, the root of a gather or scatter, the
// peer of a send/recv), and its steps with the states NCCL records.  Each
// transfer takes its own link's modelled time (cluster().link, with slow_nic and
// slow_pair applied); a ring's links share the op's window, so a fast link waits
// for its peer and the slow one spends the window transmitting.  Every op also
// reports its kernel channels (KernelCh), with GPU timer readings: for a send or
// receive, the time its own link (intra-node too) takes to move its bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "comm.h"
#include "op.h"

namespace ringside::sim::nccl {

class ProxyEvents {
 public:
  // Before the op's data moves: starts the group, op and proxy op events and the
  // first step of each proxy op (a late peer shows as waiting in that step).
  ProxyEvents(Comm& comm, const std::vector<const OpDesc*>& ops);
  // Stops whatever is still open (an op that failed or was aborted).
  ~ProxyEvents();
  ProxyEvents(const ProxyEvents&) = delete;
  ProxyEvents& operator=(const ProxyEvents&) = delete;

  // After the data moved: lets `duration_ns` of modelled time pass, from the last
  // member's arrival (`ready_ns`), in steps reported to the plugin.  With events,
  // the window starts no earlier than now, so no step is reported shorter than
  // its link's time.
  void pace(int64_t ready_ns, int64_t duration_ns);

  struct Transfer {
    int peer = -1;
    bool is_send = false;
    uint64_t bytes = 0;
    double link_s = 0;     // time on its link: latency + bytes / bandwidth
    bool coupled = false;  // a ring or chain: paced by the op's slowest link
    int op = 0;            // index into the task's ops (the parent event)
  };
  // The inter-node transfers of `op` at comm rank `comm.rank` (exposed for tests).
  static std::vector<Transfer> transfers(const Comm& comm, const OpDesc& op, int op_index);

  // The send/recv tasks NCCL 2.28 makes of `op` (send, recv, and alltoall, gather
  // and scatter, which it lowers to them): a peer and a direction each, never
  // this rank itself.  Empty for collectives that run as one kernel (rings, chains).
  struct PeerTask {
    int peer = -1;
    bool is_send = false;
  };
  static std::vector<PeerTask> peer_tasks(const Comm& comm, const OpDesc& op);

 private:
  struct ChannelOp {
    size_t transfer = 0;
    uint8_t channel = 0;
    int n_steps = 1;
    uint64_t bytes = 0;
    void* handle = nullptr;
    void* step = nullptr;
  };
  // A GPU kernel channel of an op (KernelCh events, parent: the op's event): it
  // runs from the op's start on the device until its own data has moved, which
  // for a send/recv is its link's time (intra-node links included), for a
  // collective the op's whole window.
  struct KernelChannel {
    void* parent = nullptr;  // the op's (or its send/recv task's) event
    uint8_t channel = 0;
    double link_s = -1;  // send/recv: time on its link; < 0: the op's window
    void* handle = nullptr;
  };
  struct Task {
    size_t op = 0;
    int peer = -1;
    bool is_send = false;
    void* handle = nullptr;
  };
  void* parent_of(const Transfer& t) const;
  void start_step(ChannelOp& c, int k);
  void end_step(ChannelOp& c, int k);
  void close_all();

  Comm& comm_;
  bool active_ = false;
  void* group_ = nullptr;
  std::vector<void*> op_events_;
  std::vector<Transfer> transfers_;
  std::vector<ChannelOp> channels_;
  std::vector<KernelChannel> kernels_;
  std::vector<Task> tasks_;
};

}  // namespace ringside::sim::nccl
