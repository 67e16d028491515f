#include "step_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "checks.h"

namespace ringside::examples {
namespace {

using Clock = std::chrono::steady_clock;

// Runs on the stream in place of kernels: the step's work is its duration.
void CUDART_CB sleep_for_ms(void* arg) {
  const double ms = *static_cast<const double*>(arg);
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, const Identity& id, const Layout& layout, Comms& comms,
                 const Sizes& sizes)
    : config_(config),
      id_(id),
      layout_(layout),
      comms_(comms),
      sizes_(sizes),
      patterns_(std::max(sizes.bucket, sizes.activation),
                {layout.dp_index, layout.dp_index + 1, layout.tp_index, layout.stage}) {
  RINGSIDE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  for (int b = 0; b < config_.buckets; ++b) {
    grads_.push_back(device_buffer(sizes_.bucket));
    if (config_.fsdp) {
      grad_shards_.push_back(device_buffer(sizes_.shard));
      param_shards_.push_back(device_buffer(sizes_.shard));
      params_.push_back(device_buffer(sizes_.bucket));
    }
  }
  if (layout_.pp > 1) {
    act_send_ = device_buffer(sizes_.activation);
    act_recv_ = device_buffer(sizes_.activation);
    grad_send_ = device_buffer(sizes_.activation);
    grad_recv_ = device_buffer(sizes_.activation);
  }
  if (layout_.tp > 1) tp_buffer_ = device_buffer(sizes_.activation);
  RINGSIDE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

Trainer::~Trainer() {
  // Best effort: a destructor must not throw, and after a failed step the
  // stream may still hold work that references these buffers.
  if (stream_ != nullptr && cudaStreamQuery(stream_) == cudaSuccess) {
    for (float* p : allocations_) cudaFree(p);
    cudaStreamDestroy(stream_);
  }
}

float* Trainer::device_buffer(size_t elements) {
  void* p = nullptr;
  RINGSIDE_CUDA_CHECK(cudaMalloc(&p, elements * sizeof(float)));
  allocations_.push_back(static_cast<float*>(p));
  RINGSIDE_CUDA_CHECK(cudaMemsetAsync(p, 0, elements * sizeof(float), stream_));
  return static_cast<float*>(p);
}

RunSummary Trainer::run() {
  RunSummary summary;
  for (int step = 1; step <= config_.steps; ++step) {
    if (step == config_.hang_step && id_.rank == config_.hang_rank) hang(step);
    const bool periodic = config_.check_every > 0 && step % config_.check_every == 0;
    // The desync step's results are wrong by design: do not check them.
    const bool check = (periodic || step == config_.steps) && step != config_.desync_step;
    const auto start = Clock::now();
    run_step(step, check);
    wait_for_stream();
    summary.step_ms.push_back(ms_since(start));
    compute_tasks_.clear();
    if (check) {
      verify_step(step);
      ++summary.checks_passed;
    }
    if (id_.rank == 0 && config_.log_every > 0 && step % config_.log_every == 0) {
      std::printf("train_example: step %d/%d step_ms %.2f%s\n", step, config_.steps,
                  summary.step_ms.back(), check ? " verified" : "");
      std::fflush(stdout);
    }
  }
  return summary;
}

void Trainer::run_step(int step, bool check) {
  const bool corrupt = step == config_.corrupt_step && id_.rank == config_.corrupt_rank;
  if (corrupt) {
    std::fprintf(stderr,
                 "train_example: rank %d contributes wrong gradients at step %d "
                 "(--corrupt-rank)\n",
                 id_.rank, step);
  }
  for (int b = 0; b < config_.buckets; ++b) {
    // zero_grad, or known values on a verified step.
    if (check) {
      fill(grads_[b], layout_.dp_index + (corrupt ? 1 : 0), step + b, sizes_.bucket);
    } else {
      RINGSIDE_CUDA_CHECK(cudaMemsetAsync(grads_[b], 0, sizes_.bucket * sizeof(float), stream_));
    }
  }
  for (int mb = 0; mb < config_.microbatches; ++mb) forward(step, mb, check);
  for (int mb = config_.microbatches - 1; mb >= 0; --mb) backward(step, mb, check);
  // With a pipeline the gradients are reduced after the flush (Megatron-like);
  // without one they were reduced during the last backward (DDP-like).
  if (layout_.pp > 1) {
    for (int b = 0; b < config_.buckets; ++b) reduce_gradients(step, b, check);
  }
}

void Trainer::forward(int step, int mb, bool check) {
  const double total_ms = step_compute_ms(config_, layout_, id_.rank, step);
  const double ms = total_ms / 3.0 / config_.microbatches;
  const bool first_stage = layout_.stage == 0;
  const bool last_stage = layout_.stage == layout_.pp - 1;
  if (layout_.pp > 1 && !first_stage && mb == 0) {
    pipeline_exchange(comms_.pp, nullptr, -1, act_recv_, layout_.stage - 1);
  }
  if (config_.fsdp && mb == 0) {
    // Parameters are gathered layer by layer just before they are used.
    for (int b = 0; b < config_.buckets; ++b) {
      gather_params(step, b, check);
      compute(ms / config_.buckets);
    }
  } else {
    compute(ms);
  }
  if (layout_.tp > 1) tp_all_reduce(step, mb, 0, check);
  if (layout_.pp > 1) {
    float* send = nullptr;
    if (!last_stage) {
      send = act_send_;
      if (check) fill(act_send_, layout_.stage, step + mb, sizes_.activation);
    }
    const bool more = !first_stage && mb + 1 < config_.microbatches;
    pipeline_exchange(comms_.pp, send, layout_.stage + 1, more ? act_recv_ : nullptr,
                      layout_.stage - 1);
  }
}

void Trainer::backward(int step, int mb, bool check) {
  const double total_ms = step_compute_ms(config_, layout_, id_.rank, step);
  const double ms = 2.0 * total_ms / 3.0 / config_.microbatches;
  const bool first_stage = layout_.stage == 0;
  const bool last_stage = layout_.stage == layout_.pp - 1;
  if (layout_.pp > 1 && !last_stage && mb == config_.microbatches - 1) {
    pipeline_exchange(comms_.pp, nullptr, -1, grad_recv_, layout_.stage + 1);
  }
  if (layout_.pp == 1 && mb == 0) {
    // DDP: each bucket is reduced as soon as its gradients are ready.
    for (int b = 0; b < config_.buckets; ++b) {
      compute(ms / config_.buckets);
      reduce_gradients(step, b, check);
    }
  } else {
    compute(ms);
  }
  if (layout_.tp > 1) tp_all_reduce(step, mb, 1, check);
  if (layout_.pp > 1) {
    float* send = nullptr;
    if (!first_stage) {
      send = grad_send_;
      if (check) fill(grad_send_, layout_.stage, step + mb + 1, sizes_.activation);
    }
    const bool more = !last_stage && mb > 0;
    pipeline_exchange(comms_.pp, send, layout_.stage - 1, more ? grad_recv_ : nullptr,
                      layout_.stage + 1);
  }
}

void Trainer::gather_params(int step, int bucket, bool check) {
  if (comms_.dp == nullptr) return;
  if (check) fill(param_shards_[bucket], layout_.dp_index, step + bucket + 1, sizes_.shard);
  RINGSIDE_NCCL_CHECK_COMM(ncclAllGather(param_shards_[bucket], params_[bucket], sizes_.shard,
                                         ncclFloat, comms_.dp, stream_),
                           comms_.dp);
}

void Trainer::reduce_gradients(int step, int bucket, bool /*check*/) {
  if (comms_.dp == nullptr) return;
  const bool desync = bucket == 0 && step == config_.desync_step && id_.rank == config_.desync_rank;
  if (desync) {
    std::fprintf(
        stderr, "train_example: rank %d issues a mismatched %s at step %d (--desync-rank)\n",
        id_.rank, config_.desync_kind == DesyncKind::kCount ? "count" : "collective", step);
  }
  if (config_.fsdp) {
    if (desync && config_.desync_kind == DesyncKind::kCollective) {
      RINGSIDE_NCCL_CHECK_COMM(ncclAllReduce(grad_shards_[bucket], grad_shards_[bucket],
                                             sizes_.shard, ncclFloat, ncclSum, comms_.dp, stream_),
                               comms_.dp);
      return;
    }
    const size_t count = desync ? std::max<size_t>(1, sizes_.shard / 2) : sizes_.shard;
    RINGSIDE_NCCL_CHECK_COMM(ncclReduceScatter(grads_[bucket], grad_shards_[bucket], count,
                                               ncclFloat, ncclSum, comms_.dp, stream_),
                             comms_.dp);
    return;
  }
  if (desync && config_.desync_kind == DesyncKind::kCollective) {
    RINGSIDE_NCCL_CHECK_COMM(ncclBroadcast(grads_[bucket], grads_[bucket], sizes_.bucket, ncclFloat,
                                           0, comms_.dp, stream_),
                             comms_.dp);
    return;
  }
  const size_t count = desync ? std::max<size_t>(1, sizes_.bucket / 2) : sizes_.bucket;
  RINGSIDE_NCCL_CHECK_COMM(
      ncclAllReduce(grads_[bucket], grads_[bucket], count, ncclFloat, ncclSum, comms_.dp, stream_),
      comms_.dp);
}

void Trainer::tp_all_reduce(int step, int mb, int direction, bool check) {
  if (check) fill(tp_buffer_, layout_.tp_index, step + mb + direction, sizes_.activation);
  RINGSIDE_NCCL_CHECK_COMM(ncclAllReduce(tp_buffer_, tp_buffer_, sizes_.activation, ncclFloat,
                                         ncclSum, comms_.tp, stream_),
                           comms_.tp);
}

void Trainer::pipeline_exchange(ncclComm_t comm, float* send, int send_peer, float* recv,
                                int recv_peer) {
  if (send == nullptr && recv == nullptr) return;
  // One group, so a stage's send to the next and receive from the previous
  // stage progress together as in a 1F1B/GPipe schedule.
  RINGSIDE_NCCL_CHECK(ncclGroupStart());
  if (send != nullptr) {
    RINGSIDE_NCCL_CHECK_COMM(ncclSend(send, sizes_.activation, ncclFloat, send_peer, comm, stream_),
                             comm);
  }
  if (recv != nullptr) {
    RINGSIDE_NCCL_CHECK_COMM(ncclRecv(recv, sizes_.activation, ncclFloat, recv_peer, comm, stream_),
                             comm);
  }
  RINGSIDE_NCCL_CHECK(ncclGroupEnd());
}

void Trainer::compute(double ms) {
  if (ms <= 0) return;
  compute_tasks_.push_back(ms);  // deque: earlier elements never move
  RINGSIDE_CUDA_CHECK(cudaLaunchHostFunc(stream_, sleep_for_ms, &compute_tasks_.back()));
}

void Trainer::fill(float* device, int member, int phase, size_t count) {
  RINGSIDE_CUDA_CHECK(cudaMemcpyAsync(device, patterns_.get(member, phase), count * sizeof(float),
                                      cudaMemcpyHostToDevice, stream_));
}

void Trainer::wait_for_stream() {
  // Poll instead of cudaStreamSynchronize so that an asynchronous NCCL error
  // (a peer died, a network failure) ends the run instead of blocking forever,
  // the way framework watchdogs do.
  auto pause = std::chrono::microseconds(50);
  const auto began = Clock::now();
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) RINGSIDE_CUDA_CHECK(state);
    if (config_.nccl_timeout_s > 0 && ms_since(began) > config_.nccl_timeout_s * 1000) {
      // PyTorch's watchdog: abort the communicators, then the uncaught timeout error
      // ends the process with SIGABRT.
      std::fprintf(stderr,
                   "train_example: rank %d: watchdog: %s did not finish within %.1f s; "
                   "aborting the communicators and the process\n",
                   id_.rank, error_context().c_str(), config_.nccl_timeout_s);
      comms_.abort();
      std::abort();
    }
    for (ncclComm_t comm : {comms_.world, comms_.dp, comms_.tp, comms_.pp}) {
      if (comm == nullptr) continue;
      ncclResult_t async = ncclSuccess;
      RINGSIDE_NCCL_CHECK_COMM(ncclCommGetAsyncError(comm, &async), comm);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string detail = ncclGetLastError(comm);
        comms_.abort();
        throw CallError(std::string("asynchronous NCCL error: ") + ncclGetErrorString(async) +
                        (detail.empty() ? "" : ": " + detail) + " on " + error_context() +
                        " (communicators aborted)");
      }
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

void Trainer::verify_step(int step) {
  const std::string at = "step " + std::to_string(step) + ", ";
  if (comms_.dp != nullptr) {
    for (int b = 0; b < config_.buckets; ++b) {
      const int phase = (step + b) % 3;
      const int dp = layout_.dp;
      if (config_.fsdp) {
        const size_t offset = static_cast<size_t>(layout_.dp_index) * sizes_.shard;
        verify_device(
            grad_shards_[b], sizes_.shard,
            [&](size_t j) { return pattern_sum(dp, offset + j, phase); },
            at + "reduce-scatter of gradient bucket " + std::to_string(b));
        const int ag_phase = (step + b + 1) % 3;
        const size_t shard = sizes_.shard;
        verify_device(
            params_[b], sizes_.bucket,
            [&](size_t i) {
              return pattern_value(static_cast<int>(i / shard), i % shard, ag_phase);
            },
            at + "all-gather of parameter bucket " + std::to_string(b));
      } else {
        verify_device(
            grads_[b], sizes_.bucket, [&](size_t i) { return pattern_sum(dp, i, phase); },
            at + "all-reduce of gradient bucket " + std::to_string(b) + " over " +
                std::to_string(dp) + " data-parallel ranks");
      }
    }
  }
  if (layout_.tp > 1) {
    const int phase = (step + 0 + 1) % 3;  // the last one: backward of microbatch 0
    const int tp = layout_.tp;
    verify_device(
        tp_buffer_, sizes_.activation, [&](size_t i) { return pattern_sum(tp, i, phase); },
        at + "tensor-parallel all-reduce");
  }
  if (layout_.pp > 1) {
    const int stage = layout_.stage;
    if (stage > 0) {
      const int phase = (step + config_.microbatches - 1) % 3;
      verify_device(
          act_recv_, sizes_.activation,
          [&](size_t i) { return pattern_value(stage - 1, i, phase); },
          at + "activations received from stage " + std::to_string(stage - 1));
    }
    if (stage < layout_.pp - 1) {
      const int phase = (step + 1) % 3;
      verify_device(
          grad_recv_, sizes_.activation,
          [&](size_t i) { return pattern_value(stage + 1, i, phase); },
          at + "gradients received from stage " + std::to_string(stage + 1));
    }
  }
}

void Trainer::hang(int step) {
  std::fprintf(stderr,
               "train_example: rank %d stops before step %d and waits forever (--hang-rank)\n",
               id_.rank, step);
  std::fflush(stderr);
  for (;;) pause();
}

}  // namespace ringside::examples
