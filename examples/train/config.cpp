#include "config.h"

#include "checks.h"

namespace ringside::examples {

void add_train_options(CLI::App& app, TrainConfig& c) {
  const auto positive = CLI::PositiveNumber;
  app.option_defaults()->always_capture_default();
  app.add_option("--steps", c.steps, "training steps")->check(CLI::Range(1, 1000000));
  app.add_option("--seed", c.seed, "seed of the data-dependent work variation");
  app.add_option("--compute-ms", c.compute_ms, "compute time per step in ms (fwd 1/3, bwd 2/3)")
      ->check(CLI::Range(0.0, 600000.0));
  app.add_option("--buckets", c.buckets, "gradient buckets (one reduction each) per step")
      ->check(CLI::Range(1, 1024));
  app.add_option("--bucket-mb", c.bucket_mb, "gradient bucket size in MiB (PyTorch DDP: 25)")
      ->check(positive)
      ->check(CLI::Range(0.0, 4096.0));
  app.add_option("--activation-mb", c.activation_mb,
                 "activation size in MiB (pipeline send/recv, tensor-parallel all-reduce)")
      ->check(positive)
      ->check(CLI::Range(0.0, 4096.0));
  app.add_option("--tp", c.tp, "tensor-parallel group size (consecutive ranks)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--pp", c.pp, "pipeline stages")->check(CLI::Range(1, 1024));
  app.add_option("--dp", c.dp,
                 "data-parallel group size; optional, must equal world / (tp * pp) (0 = derive it)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option_function<std::string>(
         "--comm-init",
         [&c](const std::string& name) {
           c.comm_init = name == "uniqueid" ? CommInit::kUniqueId : CommInit::kSplit;
         },
         "how the tp/dp/pp communicators are made: split (ncclCommSplit of the world "
         "communicator) or uniqueid (the group's first member calls ncclGetUniqueId and shares "
         "it, every member calls ncclCommInitRank, as PyTorch's new_group does)")
      ->default_str("split")
      ->check(CLI::IsMember({"split", "uniqueid"}));
  app.add_option("--microbatches", c.microbatches, "microbatches per step (GPipe schedule)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--fsdp", c.fsdp,
               "FSDP-like: all-gather parameters before forward and reduce-scatter gradients "
               "instead of all-reducing them");
  app.add_option_function<std::string>(
         "--imbalance",
         [&c](const std::string& name) {
           c.imbalance = name == "data"       ? Imbalance::kData
                         : name == "pipeline" ? Imbalance::kPipeline
                                              : Imbalance::kNone;
         },
         "per-rank work: none; data (a different heavy rank each step, seeded); "
         "pipeline (--heavy-stage does more work)")
      ->check(CLI::IsMember({"none", "data", "pipeline"}));
  app.add_option("--heavy-factor", c.heavy_factor, "work multiplier of the heavy rank or stage")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_option("--heavy-stage", c.heavy_stage,
                 "pipeline stage with more work for --imbalance pipeline (default: the last)")
      ->check(CLI::Range(0, 1023));
  app.add_option("--jitter", c.jitter, "random per-rank work variation, fraction (0.05 = +-5%)")
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--check-every", c.check_every,
                 "verify reduction results on the host every K steps (0 = only the last step)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--log-every", c.log_every, "print a progress line every N steps (0 = none)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--desync-rank", c.desync_rank,
                 "app fault: this rank issues a different gradient reduction at --desync-step")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--desync-step", c.desync_step, "step (1-based) of the desync")
      ->check(CLI::Range(1, 1000000));
  app.add_option_function<std::string>(
         "--desync-kind",
         [&c](const std::string& name) {
           c.desync_kind = name == "collective" ? DesyncKind::kCollective : DesyncKind::kCount;
         },
         "count: half the element count; collective: a broadcast (FSDP: an all-reduce) instead")
      ->check(CLI::IsMember({"count", "collective"}));
  app.add_option("--hang-rank", c.hang_rank,
                 "app fault: this rank stops forever before its first op of --hang-step")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--hang-step", c.hang_step, "step (1-based) before which --hang-rank stops")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--nccl-timeout", c.nccl_timeout_s,
                 "seconds a step may wait for its ops; then abort the communicators and the "
                 "process (SIGABRT), as PyTorch's NCCL watchdog does (0 = wait forever)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--corrupt-rank", c.corrupt_rank,
                 "test aid: this rank contributes wrong gradients at --corrupt-step (the check "
                 "must fail)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--corrupt-step", c.corrupt_step,
                 "verified step (multiple of --check-every, or the last) of --corrupt-rank")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--quick-exit-rank", c.quick_exit_rank,
                 "this rank ends with _exit(0) after destroying its communicators, skipping "
                 "exit handlers (as Python's os._exit)")
      ->check(CLI::Range(0, 1 << 20));
}

void validate_for_world(TrainConfig& c, int world) {
  if (world % (c.tp * c.pp) != 0) {
    throw UsageError("--tp " + std::to_string(c.tp) + " x --pp " + std::to_string(c.pp) +
                     " does not divide the world size " + std::to_string(world) +
                     "; choose sizes whose product divides it");
  }
  const int dp = world / (c.tp * c.pp);
  if (c.dp != 0 && c.dp != dp) {
    throw UsageError("--dp " + std::to_string(c.dp) + " does not match the world size " +
                     std::to_string(world) + " / (--tp " + std::to_string(c.tp) + " x --pp " +
                     std::to_string(c.pp) + ") = " + std::to_string(dp) + "; give --dp " +
                     std::to_string(dp) + " or leave it out");
  }
  c.dp = dp;
  if (c.heavy_stage < 0) c.heavy_stage = c.pp - 1;
  if (c.heavy_stage >= c.pp) {
    throw UsageError("--heavy-stage " + std::to_string(c.heavy_stage) + " is not a stage of --pp " +
                     std::to_string(c.pp) + " (stages are 0.." + std::to_string(c.pp - 1) + ")");
  }
  if (c.imbalance == Imbalance::kPipeline && c.pp < 2) {
    throw UsageError("--imbalance pipeline needs --pp 2 or more");
  }
  if ((c.desync_rank >= 0) != (c.desync_step > 0)) {
    throw UsageError("--desync-rank and --desync-step go together; give both or neither");
  }
  if ((c.hang_rank >= 0) != (c.hang_step > 0)) {
    throw UsageError("--hang-rank and --hang-step go together; give both or neither");
  }
  if ((c.corrupt_rank >= 0) != (c.corrupt_step > 0)) {
    throw UsageError("--corrupt-rank and --corrupt-step go together; give both or neither");
  }
  if (c.desync_rank >= world || c.hang_rank >= world || c.corrupt_rank >= world) {
    throw UsageError("--desync-rank/--hang-rank/--corrupt-rank must be below the world size " +
                     std::to_string(world));
  }
  if (c.desync_step > c.steps || c.hang_step > c.steps || c.corrupt_step > c.steps) {
    throw UsageError("--desync-step/--hang-step/--corrupt-step must be at most --steps " +
                     std::to_string(c.steps));
  }
  if (c.corrupt_step > 0 && c.corrupt_step != c.steps &&
      (c.check_every == 0 || c.corrupt_step % c.check_every != 0)) {
    throw UsageError("--corrupt-step " + std::to_string(c.corrupt_step) +
                     " is not a verified step; use a multiple of --check-every or the last step");
  }
  if ((c.desync_rank >= 0 || c.corrupt_rank >= 0) && dp < 2) {
    throw UsageError(
        "--desync-rank and --corrupt-rank need a data-parallel group of 2 or more ranks (dp is " +
        std::to_string(dp) + ")");
  }
}

const char* to_string(Imbalance imbalance) {
  switch (imbalance) {
    case Imbalance::kNone:
      return "none";
    case Imbalance::kData:
      return "data";
    case Imbalance::kPipeline:
      return "pipeline";
  }
  return "?";
}

const char* to_string(CommInit init) {
  switch (init) {
    case CommInit::kSplit:
      return "split";
    case CommInit::kUniqueId:
      return "uniqueid";
  }
  return "?";
}

}  // namespace ringside::examples
