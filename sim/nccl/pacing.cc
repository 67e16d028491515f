#include "pacing.h"

#include <algorithm>
#include <limits>

namespace ringside::sim::nccl {
namespace {

struct PathCost {
  double bw_bytes_per_s = std::numeric_limits<double>::infinity();
  double lat_s = 0;
  void add(const Link& l) {
    bw_bytes_per_s = std::min(bw_bytes_per_s, l.bandwidth_gbps * 1e9);
    lat_s = std::max(lat_s, l.latency_us * 1e-6);
  }
};

PathCost ring_cost(const Comm& comm) {
  PathCost c;
  const int n = comm.nranks;
  for (int i = 0; i < n; ++i) c.add(cluster().link(comm.endpoint(i), comm.endpoint((i + 1) % n)));
  return c;
}

PathCost all_pairs_cost(const Comm& comm) {
  PathCost c;
  for (int i = 0; i < comm.nranks; ++i) {
    for (int j = i + 1; j < comm.nranks; ++j)
      c.add(cluster().link(comm.endpoint(i), comm.endpoint(j)));
  }
  return c;
}

PathCost star_cost(const Comm& comm, int root) {
  PathCost c;
  for (int i = 0; i < comm.nranks; ++i) {
    if (i != root) c.add(cluster().link(comm.endpoint(root), comm.endpoint(i)));
  }
  return c;
}

}  // namespace

int64_t model_duration_ns(const Comm& comm, const OpDesc& op) {
  const int n = comm.nranks;
  const double es = static_cast<double>(op.type_size());
  const double count = static_cast<double>(op.count);
  double seconds = 0;
  double factor = comm.slow_factor;
  if (n > 1) {
    switch (op.func) {
      case Func::kAllReduce: {
        PathCost c = ring_cost(comm);
        seconds = 2.0 * (n - 1) * c.lat_s + 2.0 * (n - 1) / n * count * es / c.bw_bytes_per_s;
        break;
      }
      case Func::kAllGather:
      case Func::kReduceScatter: {
        PathCost c = ring_cost(comm);
        seconds = (n - 1) * c.lat_s + (n - 1.0) / n * (n * count * es) / c.bw_bytes_per_s;
        break;
      }
      case Func::kBroadcast:
      case Func::kReduce: {
        PathCost c = ring_cost(comm);
        seconds = (n - 1) * c.lat_s + count * es / c.bw_bytes_per_s;
        break;
      }
      case Func::kAlltoAll: {
        PathCost c = all_pairs_cost(comm);
        seconds = c.lat_s + (n - 1.0) / n * (n * count * es) / c.bw_bytes_per_s;
        break;
      }
      case Func::kGather:
      case Func::kScatter: {
        PathCost c = star_cost(comm, op.root);
        seconds = c.lat_s + (n - 1) * count * es / c.bw_bytes_per_s;
        break;
      }
      case Func::kSend:
      case Func::kRecv: {
        PathCost c;
        if (op.root != comm.rank)
          c.add(cluster().link(comm.endpoint(comm.rank), comm.endpoint(op.root)));
        else
          c.add(cluster().intra_node());
        // Only the two ends of a send/recv slow it down.
        factor = std::max(comm.members[comm.rank].slow_factor, comm.members[op.root].slow_factor);
        seconds = c.lat_s + count * es / c.bw_bytes_per_s;
        break;
      }
      case Func::kControl:
        break;
    }
  }
  return static_cast<int64_t>(seconds * factor * 1e9);
}

}  // namespace ringside::sim::nccl
