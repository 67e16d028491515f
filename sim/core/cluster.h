// The sim's cluster model and fault configuration (ringside::sim).
//
// API summary (static PIC library `ringside_sim_cluster`, linked into every sim library):
//   const Cluster& cluster();            process-wide model, loaded once from $RINGSIM_CLUSTER
//                                        (defaults without it); a bad file prints one message
//                                        naming the file and key on stderr and exits with 2.
//   Result<Cluster> parse_cluster(text, source)   / load_cluster_file(path)   for tests/tools.
//   Identity:  c.my_node() (name, gpus, model), c.global_rank(), c.node_index(name),
//              c.default_node_name_of_rank(rank) (rank / gpus-per-node, when names are not
//              exchanged between processes).
//   Links:     c.link({node_a, gpu_a}, {node_b, gpu_b}) -> {bandwidth_gbps, latency_us},
//              applying slow_nic and slow_pair. Endpoints are named so that processes agree.
//   Faults:    c.my_device_slow_factor(gpu), c.slow_factor(node, gpu, rank),
//              c.op_fault(kind, rank, comm_index) -> first matching stop/stall/crash entry.
//   NVML:      c.nvml_state(node_index, gpu).
// Node indices are positions in Cluster::nodes() of THIS process (without a file, nodes are
// added on demand, so exchange names, not indices); gpu indices are local device ordinals.
// The file format and the fault semantics are documented in docs/sim.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/status.h"

namespace ringside::sim {

// Defaults documented in docs/sim.md; scaled down so two CPU cores can meet them.
inline constexpr int kDefaultGpusPerNode = 8;
inline constexpr const char* kDefaultGpuModel = "H100-SXM5-80GB";
inline constexpr const char* kDefaultNodeName = "node1";
inline constexpr double kDefaultIntraBandwidthGBps = 4.0;
// A GPU's device-to-device copy bandwidth (its memory), GB/s: low enough that a
// copy's time is the model's, not the host CPU's (which other processes share).
inline constexpr double kDefaultDeviceCopyGBps = 2.0;
inline constexpr double kDefaultIntraLatencyUs = 3.0;
inline constexpr double kDefaultInterBandwidthGBps = 1.0;
inline constexpr double kDefaultInterLatencyUs = 10.0;

struct XidEvent {
  uint64_t code = 0;
  double at_seconds = 0;  // after the process's nvmlInit
};

// What NVML reports for one GPU. Clock-event reason bits are NVML's.
struct GpuNvmlState {
  unsigned sm_clock_mhz = 1980;
  unsigned max_sm_clock_mhz = 1980;
  unsigned mem_clock_mhz = 2619;
  unsigned max_mem_clock_mhz = 2619;
  unsigned temperature_c = 45;
  unsigned power_mw = 350000;
  unsigned power_limit_mw = 700000;
  // utilization.gpu: measured (the share of time this process's streams on the GPU
  // ran a task), unless the cluster file sets a value.
  unsigned utilization_gpu_pct = 0;
  bool utilization_gpu_fixed = false;
  unsigned utilization_memory_pct = 0;
  uint64_t memory_total_bytes = 80ull << 30;
  uint64_t memory_used_bytes = 0;
  uint64_t clock_event_reasons = 0;
  uint64_t ecc_volatile_corrected = 0;
  uint64_t ecc_volatile_uncorrected = 0;
  uint64_t ecc_aggregate_corrected = 0;
  uint64_t ecc_aggregate_uncorrected = 0;
  unsigned remapped_rows_correctable = 0;
  unsigned remapped_rows_uncorrectable = 0;
  bool remap_pending = false;
  bool remap_failure = false;
  unsigned pcie_replays = 0;
  unsigned pcie_gen = 5;
  unsigned pcie_max_gen = 5;
  unsigned pcie_width = 16;
  unsigned pcie_max_width = 16;
  std::vector<XidEvent> xids;
};

struct Node {
  std::string name;
  int gpus = kDefaultGpusPerNode;
  std::string gpu_model = kDefaultGpuModel;
  std::vector<GpuNvmlState> nvml;  // one per GPU
};

struct Link {
  double bandwidth_gbps = 0;  // GB/s (1e9 bytes per second)
  double latency_us = 0;
};

struct Endpoint {
  std::string_view node;  // node name
  int gpu = 0;            // local device ordinal
};

enum class OpFaultKind { kStop, kStall, kCrash, kFreeze };

// stop / stall / crash: `op` counts the NCCL ops (collectives and send/recv) issued on
// communicator `comm_index` of the process, from 0; comm_index 0 ("world") is the first
// communicator the process created.
struct OpFault {
  OpFaultKind kind = OpFaultKind::kStop;
  int rank = 0;  // global rank of the process; -1 (freeze only): every rank
  int comm_index = 0;
  int64_t op = 0;
};

struct SlowGpu {
  int rank = -1;     // >= 0: matches the process with that global rank (all its devices)
  std::string node;  // else node + gpu
  int gpu = -1;
  double factor = 1;
};

struct SlowNic {
  std::string node;
  double factor = 1;
};

// Two nodes (every link between them), or two GPUs of one node (a == b): the
// NVLink/PCIe path between those devices.
struct SlowPair {
  std::string a, b;
  int gpu_a = -1, gpu_b = -1;  // >= 0: an intra-node pair of node a
  double factor = 1;
};

class Cluster {
 public:
  // One healthy node "node1" with 8 GPUs (this process's node is added if it differs).
  static Cluster defaults();

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::string& source() const { return source_; }  // file path, or "" for defaults
  bool from_file() const { return !source_.empty(); }
  int gpus_per_node() const { return gpus_per_node_; }
  // Device-to-device copies take at least bytes / this (before slow_gpu).
  double device_copy_gbps() const { return device_copy_gbps_; }
  const Link& intra_node() const { return intra_; }
  const Link& inter_node() const { return inter_; }

  // -1 if the name is not a node of the cluster.
  int node_index(std::string_view name) const;
  // Node name of a global rank when names were not exchanged: with a file, the node
  // holding GPU slot `rank` when nodes are filled in order (clamped to the last node);
  // without one, "node<rank / 8 + 1>".
  std::string default_node_name_of_rank(int rank) const;
  // This process's node: RINGSIM_NODE, else SLURMD_NODENAME under Slurm, else
  // default_node_name_of_rank(global rank, 0 when unknown).
  int my_node_index() const { return my_node_; }
  const Node& my_node() const { return nodes_[static_cast<size_t>(my_node_)]; }
  // Global rank from OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK (first set); -1 if none.
  int global_rank() const { return global_rank_; }

  // Bandwidth and latency between two endpoints: intra-node when on the same node, else
  // inter-node with bandwidth divided by max(slow_nic of both ends) and by slow_pair;
  // intra-node divided by the slow_pair of those two GPUs.
  Link link(Endpoint a, Endpoint b) const;

  // Multiplier (>= 1) for everything on the streams of GPU `gpu` of node `node`, in the
  // process of global rank `rank` (-1: unknown); product of all matching slow_gpu entries.
  double slow_factor(std::string_view node, int gpu, int rank) const;
  // The same for a device of this process.
  double my_device_slow_factor(int gpu) const {
    return slow_factor(my_node().name, gpu, global_rank_);
  }

  const OpFault* op_fault(OpFaultKind kind, int global_rank, int comm_index) const;
  const std::vector<OpFault>& op_faults() const { return op_faults_; }
  const std::vector<SlowGpu>& slow_gpus() const { return slow_gpus_; }
  const std::vector<SlowNic>& slow_nics() const { return slow_nics_; }
  const std::vector<SlowPair>& slow_pairs() const { return slow_pairs_; }

  // NVML state of a GPU; out-of-range arguments give a healthy default state.
  const GpuNvmlState& nvml_state(int node, int gpu) const;

 private:
  friend class ClusterParser;
  friend Result<Cluster> resolve_identity(Cluster c);
  friend Result<Cluster> parse_cluster(std::string_view, const std::string&);
  std::string source_;
  int gpus_per_node_ = kDefaultGpusPerNode;
  std::string gpu_model_ = kDefaultGpuModel;
  double device_copy_gbps_ = kDefaultDeviceCopyGBps;
  Link intra_{kDefaultIntraBandwidthGBps, kDefaultIntraLatencyUs};
  Link inter_{kDefaultInterBandwidthGBps, kDefaultInterLatencyUs};
  std::vector<Node> nodes_;
  std::vector<SlowGpu> slow_gpus_;
  std::vector<SlowNic> slow_nics_;
  std::vector<SlowPair> slow_pairs_;
  std::vector<OpFault> op_faults_;
  int my_node_ = 0;
  int global_rank_ = -1;
};

// Parses a cluster file's text; `source` names it in error messages.
// Identity (my node) is resolved from the environment as cluster() would.
Result<Cluster> parse_cluster(std::string_view json_text, const std::string& source);
// Refuses anything but a regular file of at most kMaxClusterFileBytes.
inline constexpr size_t kMaxClusterFileBytes = size_t{16} << 20;
Result<Cluster> load_cluster_file(const std::string& path);
// Sets my node and global rank from the environment (used by the loaders above).
Result<Cluster> resolve_identity(Cluster c);
// Defaults, or the file named by RINGSIM_CLUSTER, with identity resolved.
Result<Cluster> load_cluster_from_env();

// The process-wide model (thread-safe, loaded on first use). On a bad file: one
// "ringsim: ..." line on stderr, then exit(2) — the sim must never run a wrong model.
const Cluster& cluster();

}  // namespace ringside::sim
