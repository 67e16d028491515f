// The benchmark driver: for every datatype, op, root and size, times the
// collective out of place and in place, checks the results on the host, and
// fills the table (nccl-tests' TimeTest/BenchTime sequence).
#pragma once

#include <memory>
#include <vector>

#include "bench/options.h"
#include "bench/report.h"
#include "core/op_trace.h"
#include "core/world.h"

namespace ringside::bench {

class Runner {
 public:
  Runner(World& world, const BenchOptions& options, const Report& report, OpTrace* trace);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  Summary run();

 private:
  struct Setup {
    const DataType* type = nullptr;
    const RedOp* op = nullptr;
    int root = 0;
    uint64_t size = 0;  // requested size (-b..-e)
    Counts c;
  };
  struct Local {
    void* send = nullptr;
    void* recv = nullptr;
    std::vector<std::byte> host;
  };

  Setup make_setup(const DataType* type, const RedOp* op, int root, uint64_t size) const;
  void issue(const Setup& s, bool in_place, bool capturing);
  void sync_all(bool trace_complete);
  void barrier();
  void warm_up(const DataType* type, const RedOp* op, int root);
  Measurement bench_time(const Setup& s, bool in_place);
  int64_t check_once(const Setup& s, bool in_place, int rep);
  double combine_time(double seconds);

  World& world_;
  const BenchOptions& o_;
  const Report& report_;
  OpTrace* trace_;
  std::vector<Local> locals_;
  size_t buffer_bytes_ = 0;
  int rep_ = 0;
  double bw_sum_ = 0;
  int bw_count_ = 0;
};

}  // namespace ringside::bench
