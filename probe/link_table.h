// Per-peer transfer timing from NCCL's profiler plugin events (profiler_plugin.cpp),
// aggregated in memory and handed to the writer at each flush: one row per
// (NCCL communicator, peer, channel, direction, source) that moved data in the
// window, never one per step.
//
// Threads: a proxy op and its steps come from one NCCL proxy thread, so a step
// touches only its op's counters (no lock); an op's counters join its
// communicator's window under that communicator's mutex when the op stops, and
// the writer thread takes the windows at a flush.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ringside/trace_schema.h"

namespace ringside::probe {

struct LinkCounters {
  uint64_t ops = 0, steps = 0, bytes = 0;
  int64_t active_ns = 0;     // step start to stop
  int64_t net_ns = 0;        // send: SendWait (the network transmitting); recv: RecvWait
  int64_t peer_wait_ns = 0;  // send: waiting for the receiver's credit
  int64_t gpu_wait_ns = 0;   // send: for the GPU to fill; recv: flush and GPU consuming
  // send: the fastest step (bytes over its SendWait time) of at least 64 KiB
  uint64_t best_step_bytes = 0;
  int64_t best_step_ns = 0;
  void offer_step(uint64_t step_bytes, int64_t step_ns);
  void add(const LinkCounters& o);
};

// Where a row's counters come from (LinkRecord::source).
enum class LinkSource : uint8_t { kProxy = 0, kKernel = 1 };

// One communicator as NCCL's profiler `init` announced it.
class PluginComm {
 public:
  PluginComm(uint64_t comm_hash, int nranks, int rank, int n_nodes)
      : comm_hash_(comm_hash), nranks_(nranks), rank_(rank), n_nodes_(n_nodes) {}
  void merge(int32_t peer, uint8_t channel, bool is_send, const LinkCounters& c,
             LinkSource source = LinkSource::kProxy);
  // A peer a row may name: another rank of the communicator.
  bool valid_peer(int32_t peer) const { return peer >= 0 && peer < nranks_ && peer != rank_; }
  // Appends this window's rows (time `t_ns`, trace-local) and starts a new window.
  void drain(int64_t t_ns, std::vector<trace::LinkRecord>& out);

 private:
  const uint64_t comm_hash_;
  const int nranks_, rank_, n_nodes_;
  std::mutex mu_;
  std::map<uint64_t, LinkCounters> window_;  // key: peer, channel, source, direction
};

// Every communicator the plugin was told of; the writer drains them all.
class LinkTable {
 public:
  PluginComm* add(uint64_t comm_hash, int nranks, int rank, int n_nodes);
  void drain(int64_t t_ns, std::vector<trace::LinkRecord>& out);

 private:
  std::mutex mu_;
  // Never freed before exit: NCCL may deliver a late event after finalize.
  std::vector<std::unique_ptr<PluginComm>> comms_;
};

LinkTable& link_table();

}  // namespace ringside::probe
