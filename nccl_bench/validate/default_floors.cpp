#include "validate/default_floors.h"

namespace ringside::bench {

namespace {

// Floors are set well below what a healthy part delivers (about 60% of typical
// readings), to catch a GPU or link running at a fraction of its speed, not to
// grade healthy ones.  Real GPUs (8 per node, NVLink/NVSwitch):
//   device copy: HBM3 3.35 TB/s (H100 SXM), HBM2e 2.0 TB/s (A100 80GB); a copy
//     reads and writes, so bytes / time is about half of that;
//   GPU pair sendrecv: NVLink 4 (H100) 450 GB/s, NVLink 3 (A100) 300 GB/s each way;
//   intra-node all_reduce: bus bandwidth of 8 GPUs at 64 MiB.
// The sim (docs/sim.md): a device copy is paced by its model (2 GB/s by default),
// whatever the host's load, so it gets a floor; its links' bandwidths come from
// the cluster file, not the model, and on a loaded host the transfers are bound by
// the CPU, so they get none (the pairs are compared with each other instead).
constexpr const char* kTable = R"({
  "schema": "ringside.baseline/1",
  "comment": "built-in floor table",
  "models": {
    "NVIDIA H100 80GB HBM3": {
      "device_copy": {"64M": 1000},
      "intra_node_pair_sendrecv": {"64M": 150},
      "intra_node_all_reduce": {"64M": 200}
    },
    "NVIDIA A100-SXM4-80GB": {
      "device_copy": {"64M": 600},
      "intra_node_pair_sendrecv": {"64M": 100},
      "intra_node_all_reduce": {"64M": 120}
    },
    "ringside-sim H100-SXM5-80GB": {
      "device_copy": {"64M": 1.0}
    }
  }
})";

}  // namespace

Baseline default_floors() {
  return Baseline::parse(kTable, "built-in floor table");
}

}  // namespace ringside::bench
