// The verdict of `validate` from the gathered measurements: pure logic, the
// same on every rank, unit-tested without GPUs.
//
// Rules (docs/nccl_bench.md, "validate"):
//  - a node fails on any NVML health problem of one of its GPUs;
//  - a node fails when one of its GPUs copies device to device below the
//    floor, or, pass by pass, more than X% below the median of every other GPU of
//    the same model (its node's and the others'): a slow GPU is found even on one
//    node without a floor;
//  - a node fails when its intra-node all_reduce bus bandwidth is below the
//    baseline floor, or more than X% below the median of the other nodes with
//    the same GPU model and GPU count (sizes >= 1 MiB), and by more than the
//    readings' own spread (a difference within it is not evidence);
//  - a node pair is slow when its inter-node bandwidth is below the floor or, pass
//    by pass, more than X% below the median of the other pairs (validate/pair_passes.h);
//  - a node with at least two measured pairs, more than half of them slow, fails
//    (its NIC/port); remaining slow pairs fail as links.  Slow pairs explained by
//    a failing node are reported as "attributed", not as separate failures;
//  - inside a node, GPU pairs are compared with each other pass by pass, and with
//    the floor (validate/pair_passes.h): a node fails naming the GPU or the pair.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "validate/baseline.h"
#include "validate/pair_passes.h"
#include "validate/plan.h"

namespace ringside::bench {

inline constexpr uint64_t kFleetMinSize = 1ull << 20;

struct PairResult {
  NodePair nodes;
  std::vector<double> busbw;               // [size] best rail, best pass, GB/s
  std::vector<std::vector<double>> rails;  // [size][rail] best pass
  // [pass][size] the best rail's reading in each pass (validate/pair_passes.h).
  std::vector<std::vector<double>> passes;
};

struct ValidateData {
  std::vector<std::string> nodes;
  std::vector<std::string> models;  // GPU name per node
  std::vector<int> gpus;            // ranks per node
  std::vector<uint64_t> sizes;
  std::vector<std::vector<double>> intra;  // [node][size]; NaN when not measured
  // [node][size] how far the worst of its timing blocks was from the best
  // (0.05: 5%); empty or NaN when unknown.
  std::vector<std::vector<double>> intra_spread;
  // [node][GPU slot] device-to-device copy GB/s at the largest size (bytes over
  // time); NaN when not measured.
  std::vector<std::vector<double>> copy;
  // [node][GPU slot][pass] the same, pass by pass (validate/pair_passes.h).
  std::vector<std::vector<std::vector<double>>> copy_passes;
  std::vector<double> global;  // [size]; empty when not run
  std::vector<PairResult> pairs;
  // [node] sendrecv between the node's GPU pairs, pass by pass; empty when not measured.
  std::vector<PairPasses> gpu_pairs;
  uint64_t gpu_pair_size = 0;                         // bytes of each GPU pair sendrecv
  std::vector<std::vector<std::string>> health_fail;  // [node]
  std::vector<std::vector<std::string>> health_warn;  // [node]
};

struct NodeVerdict {
  bool pass = true;
  std::vector<std::string> reasons;
  std::vector<std::string> warnings;
  // Checks that had nothing to compare with (no floor, no peer): said, never
  // passed silently.
  std::vector<std::string> unchecked;
};

enum class LinkStatus { kPass, kFail, kAttributed };

struct LinkVerdict {
  LinkStatus status = LinkStatus::kPass;
  std::vector<std::string> reasons;
};

struct Verdict {
  std::vector<NodeVerdict> nodes;          // parallel to ValidateData::nodes
  std::vector<LinkVerdict> links;          // parallel to ValidateData::pairs
  std::vector<std::string> fleet_reasons;  // global all_reduce below its floor
  bool pass = true;
};

Verdict evaluate(const ValidateData& data, const Baseline* baseline, double threshold_pct);

// Whether some GPU's device copy looks slow (below the floor, or below the other
// GPUs of its model in at least half of the passes): every GPU then copies more
// passes before the verdict.
bool copies_suspect(const ValidateData& data, const Baseline* baseline, double threshold_pct);

// Whether some node pair looks slow (below the floor, or below the other pairs in at
// least half of the passes): every pair then measures more passes before the verdict.
bool node_pairs_suspect(const ValidateData& data, const Baseline* baseline, double threshold_pct);
// The nodes whose intra-node all_reduce fails its check: every node measures
// again before the verdict (the comparison is relative), the faster reading counts.
std::vector<int> slow_intra(const ValidateData& data, const Baseline* baseline,
                            double threshold_pct);
// Whether some node's GPU pairs look slow (below the others in at least half of the
// passes, or below the floor): every node then measures more passes before the verdict.
bool gpu_pairs_suspect(const ValidateData& data, const Baseline* baseline, double threshold_pct);

// Bytes each GPU copies in the device-copy check: the largest size, at least
// 64 MiB (smaller copies time the launch, not the memory).
uint64_t copy_bytes(const std::vector<uint64_t>& sizes);

std::string format_size(uint64_t bytes);  // 67108864 -> "64M"
const char* link_status_name(LinkStatus s);

}  // namespace ringside::bench
