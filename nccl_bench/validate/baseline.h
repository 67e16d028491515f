// Minimum bus bandwidths per GPU model, test and size (docs/nccl_bench.md,
// "Floor table").  Example:
//   {"schema": "ringside.baseline/1",
//    "models": {"NVIDIA H100 80GB HBM3": {"intra_node_all_reduce": {"64M": 350},
//                                         "inter_node_sendrecv": {"64M": 40},
//                                         "global_all_reduce": {"64M": 30},
//                                         "device_copy": {"64M": 1000}},
//               "default": {...}}}
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ringside::bench {

inline constexpr const char* kTestIntra = "intra_node_all_reduce";
inline constexpr const char* kTestInter = "inter_node_sendrecv";
inline constexpr const char* kTestGlobal = "global_all_reduce";
inline constexpr const char* kTestCopy = "device_copy";  // per GPU, GB/s (bytes / time)
// Between two GPUs of a node, each way, GB/s (bytes / time).
inline constexpr const char* kTestIntraPair = "intra_node_pair_sendrecv";

class Baseline {
 public:
  // Throws UsageError naming the file and the offending key.
  static Baseline load(const std::string& path);
  static Baseline parse(const std::string& text, const std::string& source);

  // Floor in GB/s for `model` (else the "default" model), or nullopt.
  std::optional<double> floor(const std::string& model, const std::string& test,
                              uint64_t size) const;
  const std::string& source() const { return source_; }
  // Whether `model` has an entry of its own (not "default").
  bool has_model(const std::string& model) const { return floors_.count(model) > 0; }
  // Every floor of `other` replaces or adds to this table's, model by model, test by
  // test, size by size; the source names both.
  void override_with(const Baseline& other);

 private:
  std::string source_;
  // model -> test -> size -> GB/s
  std::map<std::string, std::map<std::string, std::map<uint64_t, double>>> floors_;
};

}  // namespace ringside::bench
