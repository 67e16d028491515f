// Cluster queries, process identity and the process-wide instance.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "cluster.h"
#include "nvml_bits.h"

namespace ringside::sim {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

Node default_node(std::string name, int gpus, const std::string& model) {
  Node n;
  n.name = std::move(name);
  n.gpus = gpus;
  n.gpu_model = model;
  n.nvml.resize(static_cast<size_t>(gpus));
  return n;
}

}  // namespace

Cluster Cluster::defaults() {
  Cluster c;
  c.nodes_.push_back(default_node(kDefaultNodeName, c.gpus_per_node_, c.gpu_model_));
  return c;
}

int Cluster::node_index(std::string_view name) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Cluster::default_node_name_of_rank(int rank) const {
  if (rank < 0) rank = 0;
  if (!from_file()) return "node" + std::to_string(rank / gpus_per_node_ + 1);
  int slot = 0;
  for (const Node& n : nodes_) {
    if (rank < slot + n.gpus) return n.name;
    slot += n.gpus;
  }
  return nodes_.back().name;
}

Link Cluster::link(Endpoint a, Endpoint b) const {
  if (a.node == b.node) {
    Link l = intra_;
    for (const SlowPair& p : slow_pairs_) {
      if (p.gpu_a < 0 || p.a != a.node) continue;
      if ((p.gpu_a == a.gpu && p.gpu_b == b.gpu) || (p.gpu_a == b.gpu && p.gpu_b == a.gpu))
        l.bandwidth_gbps /= p.factor;
    }
    return l;
  }
  Link l = inter_;
  double nic = 1;
  for (const SlowNic& s : slow_nics_) {
    if (s.node == a.node || s.node == b.node) nic = std::max(nic, s.factor);
  }
  l.bandwidth_gbps /= nic;
  for (const SlowPair& p : slow_pairs_) {
    if (p.gpu_a >= 0) continue;
    if ((p.a == a.node && p.b == b.node) || (p.a == b.node && p.b == a.node))
      l.bandwidth_gbps /= p.factor;
  }
  return l;
}

double Cluster::slow_factor(std::string_view node, int gpu, int rank) const {
  double f = 1;
  for (const SlowGpu& s : slow_gpus_) {
    bool match = s.rank >= 0 ? (rank >= 0 && s.rank == rank) : (s.node == node && s.gpu == gpu);
    if (match) f *= s.factor;
  }
  return f;
}

const OpFault* Cluster::op_fault(OpFaultKind kind, int global_rank, int comm_index) const {
  for (const OpFault& f : op_faults_) {
    if (f.kind == kind && (f.rank == global_rank || f.rank < 0) && f.comm_index == comm_index)
      return &f;
  }
  return nullptr;
}

const GpuNvmlState& Cluster::nvml_state(int node, int gpu) const {
  static const GpuNvmlState kHealthy;
  if (node < 0 || node >= static_cast<int>(nodes_.size())) return kHealthy;
  const Node& n = nodes_[static_cast<size_t>(node)];
  if (gpu < 0 || gpu >= static_cast<int>(n.nvml.size())) return kHealthy;
  return n.nvml[static_cast<size_t>(gpu)];
}

Result<Cluster> resolve_identity(Cluster c) {
  // OMPI first: mpirun inside an sbatch allocation inherits the batch step's SLURM_PROCID.
  c.global_rank_ = -1;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "RANK"}) {
    const char* v = env(name);
    if (v == nullptr) continue;
    std::string_view sv(v);
    int r = 0;
    auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), r);
    if (ec != std::errc() || ptr != sv.data() + sv.size() || r < 0)
      return Status::error(std::string("environment variable ") + name + "='" + v +
                           "' is not a non-negative integer (it gives the process's global rank)");
    c.global_rank_ = r;
    break;
  }
  std::string name;
  const char* why = nullptr;
  if (const char* v = env("RINGSIM_NODE")) {
    name = v;
    why = "RINGSIM_NODE";
  } else if (const char* s = env("SLURMD_NODENAME");
             s != nullptr && (env("SLURM_JOB_ID") || env("SLURM_PROCID"))) {
    name = s;
    why = "SLURMD_NODENAME";
  } else {
    name = c.default_node_name_of_rank(c.global_rank_);
  }
  int idx = c.node_index(name);
  if (idx < 0) {
    if (c.from_file())
      return Status::error(
          "cluster file " + c.source_ + ": node '" + name + "' (from " + why +
          ") is not in 'nodes'; add it to the file or set RINGSIM_NODE to one of its nodes");
    c.nodes_.push_back(default_node(name, c.gpus_per_node_, c.gpu_model_));
    idx = static_cast<int>(c.nodes_.size()) - 1;
  }
  c.my_node_ = idx;
  return c;
}

Result<Cluster> load_cluster_from_env() {
  if (const char* path = env("RINGSIM_CLUSTER")) return load_cluster_file(path);
  return resolve_identity(Cluster::defaults());
}

const Cluster& cluster() {
  static const Cluster* instance = [] {
    Result<Cluster> r = load_cluster_from_env();
    if (!r.ok()) {
      std::fprintf(stderr, "ringsim: error: %s\n", r.message().c_str());
      std::exit(2);
    }
    return new Cluster(std::move(r).value());  // never freed: used until process exit
  }();
  return *instance;
}

namespace {
struct ReasonName {
  const char* name;
  uint64_t bit;
};
constexpr ReasonName kReasons[] = {
    {"gpu_idle", nvmlClocksEventReasonGpuIdle},
    {"applications_clocks", nvmlClocksEventReasonApplicationsClocksSetting},
    {"sw_power_cap", nvmlClocksEventReasonSwPowerCap},
    {"hw_slowdown", nvmlClocksThrottleReasonHwSlowdown},
    {"sync_boost", nvmlClocksEventReasonSyncBoost},
    {"sw_thermal", nvmlClocksEventReasonSwThermalSlowdown},
    {"hw_thermal", nvmlClocksThrottleReasonHwThermalSlowdown},
    {"hw_power_brake", nvmlClocksThrottleReasonHwPowerBrakeSlowdown},
    {"display_clocks", nvmlClocksEventReasonDisplayClockSetting},
};
}  // namespace

uint64_t nvml_reason_bit(std::string_view name) {
  for (const ReasonName& r : kReasons) {
    if (name == r.name) return r.bit;
  }
  return 0;
}

std::string nvml_reason_names() {
  std::string out;
  for (const ReasonName& r : kReasons) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

}  // namespace ringside::sim
