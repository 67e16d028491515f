// The training loop: per step, forward and backward compute (host functions
// on the stream), pipeline send/recv, tensor-parallel all-reduces, and the
// gradient reductions, then a host-side check of the results every K steps.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <deque>
#include <vector>

#include "bootstrap.h"
#include "config.h"
#include "model.h"
#include "verify.h"

namespace ringside::examples {

struct RunSummary {
  std::vector<double> step_ms;  // wall time of every step, enqueue to completion
  int checks_passed = 0;
};

class Trainer {
 public:
  Trainer(const TrainConfig& config, const Identity& id, const Layout& layout, Comms& comms,
          const Sizes& sizes);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  RunSummary run();

 private:
  void run_step(int step, bool check);
  void forward(int step, int mb, bool check);
  void backward(int step, int mb, bool check);
  void gather_params(int step, int bucket, bool check);
  void reduce_gradients(int step, int bucket, bool check);
  void tp_all_reduce(int step, int mb, int direction, bool check);
  void pipeline_exchange(ncclComm_t comm, float* send, int send_peer, float* recv, int recv_peer);
  void compute(double ms);
  void fill(float* device, int member, int phase, size_t count);
  void wait_for_stream();
  void verify_step(int step);
  [[noreturn]] void hang(int step);
  float* device_buffer(size_t elements);

  const TrainConfig& config_;
  const Identity& id_;
  const Layout& layout_;
  Comms& comms_;
  const Sizes sizes_;
  Patterns patterns_;
  cudaStream_t stream_ = nullptr;
  std::vector<float*> allocations_;
  std::vector<float*> grads_;  // per bucket: DDP all-reduce in place, FSDP reduce-scatter input
  std::vector<float*> grad_shards_;   // FSDP reduce-scatter output
  std::vector<float*> param_shards_;  // FSDP all-gather input
  std::vector<float*> params_;        // FSDP all-gather output
  float* act_send_ = nullptr;
  float* act_recv_ = nullptr;
  float* grad_send_ = nullptr;
  float* grad_recv_ = nullptr;
  float* tp_buffer_ = nullptr;
  std::deque<double> compute_tasks_;  // host-function arguments of the current step
};

}  // namespace ringside::examples
