// train_example: a data-parallel training loop (optionally with tensor- and
// pipeline-parallel groups) written against the real CUDA runtime and NCCL
// APIs. The same binary runs on GPUs and on the sim (LD_LIBRARY_PATH).
// See examples/README.md.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "bootstrap.h"
#include "checks.h"
#include "config.h"
#include "model.h"
#include "step_loop.h"

namespace {

using namespace ringside::examples;

constexpr int kFailure = 1;
constexpr int kUsageError = 2;

void print_start(const TrainConfig& c, const Identity& id, const Layout& l, const Sizes& s,
                 int device) {
  cudaDeviceProp prop{};
  RINGSIDE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf(
      "train_example: world %d (dp %d x tp %d x pp %d, groups by %s), bootstrap %s, rank 0 on %s "
      "device %d (%s)\n",
      l.world, l.dp, l.tp, l.pp, to_string(c.comm_init), to_string(id.launcher), id.host.c_str(),
      device, prop.name);
  std::printf(
      "train_example: %d steps, %d microbatches, compute %.2f ms/step, imbalance %s, %d gradient "
      "buckets of %.2f MiB (%s), activations %.2f MiB\n",
      c.steps, c.microbatches, c.compute_ms, to_string(c.imbalance), c.buckets,
      static_cast<double>(s.bucket * sizeof(float)) / (1024.0 * 1024.0),
      c.fsdp ? "all-gather + reduce-scatter" : "all-reduce",
      static_cast<double>(s.activation * sizeof(float)) / (1024.0 * 1024.0));
  std::fflush(stdout);
}

void print_summary(const RunSummary& r) {
  // Step 1 includes connection setup, so the statistics leave it out when
  // there is more than one step.
  std::vector<double> ms(r.step_ms.begin() + (r.step_ms.size() > 1 ? 1 : 0), r.step_ms.end());
  std::sort(ms.begin(), ms.end());
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const double total = std::accumulate(r.step_ms.begin(), r.step_ms.end(), 0.0);
  std::printf(
      "train_example: done: %zu steps in %.3f s; step_ms mean %.2f median %.2f min %.2f max %.2f "
      "(step 1: %.2f); %d verified steps passed\n",
      r.step_ms.size(), total / 1000.0, mean, ms[ms.size() / 2], ms.front(), ms.back(),
      r.step_ms.front(), r.checks_passed);
  std::fflush(stdout);
}

int train(const TrainConfig& config_in) {
  TrainConfig config = config_in;
  const Identity id = detect_identity();
  validate_for_world(config, id.world_size);
  const int device = select_device(id);
  const Layout layout = Layout::make(id.rank, id.world_size, config.tp, config.pp);
  const Sizes sizes = Sizes::make(config, layout);
  if (id.rank == 0) print_start(config, id, layout, sizes, device);
  Comms comms = Comms::make(init_world_comm(id), layout, config.comm_init, id);
  RunSummary summary;
  {
    Trainer trainer(config, id, layout, comms, sizes);
    summary = trainer.run();
  }
  comms.destroy();
  if (id.rank == 0) print_summary(summary);
  finalize_launcher(id);
  if (id.rank == config.quick_exit_rank) {
    std::fflush(nullptr);
    _exit(0);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "train_example: a data-parallel training loop on the CUDA runtime and NCCL APIs, with "
      "optional tensor-parallel (--tp) and pipeline-parallel (--pp) groups.\n"
      "Launch with mpirun, srun (export NCCL_COMM_ID) or simrun; exit 0 when every verified "
      "result is right, 1 on a wrong result or a failed call, 2 on bad flags.",
      "train_example"};
  TrainConfig config;
  add_train_options(app, config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "train_example: %s\nRun 'train_example --help' for the flags.\n",
                 e.what());
    return kUsageError;
  }
  try {
    return train(config);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "train_example: %s\n", e.what());
    return kUsageError;
  } catch (const VerifyError& e) {
    std::fprintf(stderr, "train_example: %s\n", e.what());
    return kFailure;
  } catch (const CallError& e) {
    std::fprintf(stderr, "train_example: %s\n", e.what());
    return kFailure;
  }
}
