// The training run's configuration: flags, defaults and their validation.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ringside::examples {

enum class Imbalance { kNone, kData, kPipeline };
enum class DesyncKind { kCount, kCollective };
// How the tensor/data/pipeline-parallel communicators are made: ncclCommSplit
// of the world communicator, or (as PyTorch's new_group does) a unique id per
// group from its first member and ncclCommInitRank on every member.
enum class CommInit { kSplit, kUniqueId };

struct TrainConfig {
  int steps = 20;
  uint64_t seed = 1;
  double compute_ms = 30;  // forward + backward work per step (forward 1/3, backward 2/3)
  int buckets = 4;
  double bucket_mb = 1;  // gradient bucket size (PyTorch DDP uses 25)
  double activation_mb = 0.25;
  int tp = 1;
  int pp = 1;
  int dp = 0;  // 0: world / (tp * pp); otherwise must equal it
  CommInit comm_init = CommInit::kSplit;
  int microbatches = 2;
  bool fsdp = false;  // all-gather parameters + reduce-scatter gradients instead of all-reduce
  Imbalance imbalance = Imbalance::kNone;
  double heavy_factor = 1.5;
  int heavy_stage = -1;  // -1: the last pipeline stage
  double jitter = 0;     // per-rank, per-step work variation in [1 - jitter, 1 + jitter]
  int check_every = 5;   // verify every K steps (0 = never), and always the last step
  int log_every = 10;    // one stdout line every N steps on rank 0 (0 = none)
  // Application-level faults (the sim injects the hardware ones).
  int desync_rank = -1;
  int desync_step = 0;
  DesyncKind desync_kind = DesyncKind::kCount;
  int hang_rank = -1;
  int hang_step = 0;
  // As PyTorch's NCCL watchdog (TORCH_NCCL timeout): a step whose ops have not finished
  // after this many seconds aborts the communicators and the process (SIGABRT).  0: never.
  double nccl_timeout_s = 0;
  // Test aid: this rank contributes wrong gradient values at a verified step,
  // which every rank's check must catch.
  int corrupt_rank = -1;
  int corrupt_step = 0;
  // This rank ends with _exit(0) once its communicators are destroyed, skipping every
  // exit handler, as Python's os._exit does.
  int quick_exit_rank = -1;
};

// Registers every flag on `app`, writing into `config`.
void add_train_options(CLI::App& app, TrainConfig& config);

// Checks what depends on the world size (tp * pp dividing it, --dp matching, fault ranks and
// steps in range); throws UsageError naming the flag and the fix.
void validate_for_world(TrainConfig& config, int world_size);

const char* to_string(Imbalance imbalance);
const char* to_string(CommInit init);

}  // namespace ringside::examples
