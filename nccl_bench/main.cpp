// nccl_bench: nccl-tests compatible collective benchmarks, and `validate` for
// new nodes.  Exit codes: 0 pass, 1 failed check/threshold (validate: a node or
// link failed, or a peer was lost or stopped responding), 2 usage or runtime
// error (benchmarks: including a lost or unresponsive peer).
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "bench/options.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "core/errors.h"
#include "core/op_trace.h"
#include "core/world.h"
#include "ringside/version.h"
#include "validate/validate_command.h"

namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: nccl_bench <collective> [nccl-tests flags] [--json FILE] [--trace-dir DIR] "
               "[--min-busbw GBPS]\n"
               "       nccl_bench validate [--baseline FILE] [--level quick|full] "
               "[--fleet-threshold PCT] [--drain] [--json FILE]\n"
               "       nccl_bench --version\n"
               "collectives: ");
  bool first = true;
  for (const auto* c : ringside::bench::all_collectives()) {
    std::fprintf(out, "%s%s", first ? "" : ", ", c->name);
    first = false;
  }
  std::fprintf(out, "\n'nccl_bench <collective> --help' lists the flags; see docs/nccl_bench.md\n");
}

int run_bench(int argc, char** argv) {
  using namespace ringside::bench;
  auto options = parse_bench_options(argv[1], argc, argv, 2);
  if (!options) return 0;
  World world(options->world, &argc, &argv);
  Report report(*options, world);
  std::unique_ptr<OpTrace> trace;
  if (!options->trace_dir.empty()) {
    trace = std::make_unique<OpTrace>(options->trace_dir, world, report.config_json());
  }
  Summary summary;
  try {
    summary = run_benchmark(world, *options, report, trace.get());
  } catch (const CommFailure& f) {
    if (trace) trace->close_after_failure(f);
    throw;
  } catch (const RuntimeError& e) {
    // Communicators with work in flight are aborted, not destroyed (which waits for it).
    world.watchdog().stop(e.what());
    throw;
  }
  if (trace) trace->close();
  return summary.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ringside::bench;
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    usage(stdout);
    return 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", ringside::version_text("nccl_bench").c_str());
    return 0;
  }
  try {
    if (std::strcmp(argv[1], "validate") == 0) return run_validate(argc, argv);
    return run_bench(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "nccl_bench: %s\n", e.what());
    return 2;
  } catch (const RuntimeError& e) {
    std::fprintf(stderr, "nccl_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nccl_bench: internal error: %s (%s)\n", e.what(),
                 error_context().c_str());
    return 2;
  }
}
