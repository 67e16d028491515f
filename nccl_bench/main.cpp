// nccl_bench: nccl-tests compatible collective benchmarks, and `validate` for
// new nodes.  Exit codes: 0 pass, 1 failed check/threshold (validate: a node or
// link failed, or a peer was lost or stopped responding), 2 usage or runtime
// error (benchmarks: including a lost or unresponsive peer).
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

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

// `first`: the first flag; the collective is argv[first - 1], or (drop-in) `collective`.
int run_bench(const std::string& collective, int argc, char** argv, int first) {
  using namespace ringside::bench;
  auto options = parse_bench_options(collective, argc, argv, first);
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

// One line on stderr, "nccl_bench: error: ...", and exit code 2.
int report_error(const std::exception& e) {
  using namespace ringside::bench;
  if (dynamic_cast<const UsageError*>(&e) != nullptr ||
      dynamic_cast<const RuntimeError*>(&e) != nullptr) {
    std::fprintf(stderr, "nccl_bench: error: %s\n", e.what());
  } else {
    std::fprintf(stderr, "nccl_bench: error: internal: %s (%s)\n", e.what(),
                 error_context().c_str());
  }
  return 2;
}

// nccl-tests' program names: `all_reduce_perf` (a link to nccl_bench) is
// `nccl_bench all_reduce`.  The collective, or "" when not called so.
std::string drop_in_collective(const char* argv0) {
  std::string name = argv0;
  if (const auto slash = name.rfind('/'); slash != std::string::npos) name.erase(0, slash + 1);
  constexpr std::string_view kSuffix = "_perf";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return {};
  name.resize(name.size() - kSuffix.size());
  return ringside::bench::find_collective(name) != nullptr ? name : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ringside::bench;
  if (const std::string coll = drop_in_collective(argv[0]); !coll.empty()) {
    try {
      return run_bench(coll, argc, argv, 1);
    } catch (const std::exception& e) {
      return report_error(e);
    }
  }
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
    return run_bench(argv[1], argc, argv, 2);
  } catch (const std::exception& e) {
    return report_error(e);
  }
}
