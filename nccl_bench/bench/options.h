// Command-line options of `nccl_bench <collective>`: nccl-tests' flags with the
// same names and meanings, plus ringside's output and launch options.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "bench/collective.h"
#include "core/world.h"

namespace CLI {
class App;
}  // namespace CLI

namespace ringside::bench {

struct BenchOptions {
  const Collective* collective = nullptr;
  uint64_t min_bytes = 32ull << 20;     // -b
  uint64_t max_bytes = 32ull << 20;     // -e
  uint64_t step_bytes = 1ull << 20;     // -i
  uint64_t step_factor = 1;             // -f, >= 2 when given (1: not given, use -i)
  int iters = 20;                       // -n
  int warmup_iters = 1;                 // -w
  int agg_iters = 1;                    // -m
  int check_iters = 1;                  // -c
  std::vector<const DataType*> dtypes;  // -d (several for "all")
  std::vector<const RedOp*> ops;        // -o (several for "all")
  int root = 0;                         // -r; -1 = every root in turn ("all")
  int gpus_per_process = 1;             // -g: GPUs (ranks) per thread
  int threads = 1;                      // -t: threads per process
  int average = 1;                      // -a 0=rank0 1=avg 2=min 3=max
  int blocking = 0;                     // -z 0..3
  int graph_launches = 0;               // -G
  std::string json_file;                // --json / -J
  std::string trace_dir;                // --trace-dir
  std::optional<double> min_busbw;      // --min-busbw GB/s
  WorldOptions world;                   // --launcher, --rendezvous
  std::string command_line;             // for the JSON and the trace config
};

// Parses argv[first..argc) (after the collective name).  Returns nullopt when
// --help was printed; throws UsageError on any bad or unknown flag.
std::optional<BenchOptions> parse_bench_options(const std::string& collective, int argc,
                                                char** argv, int first);

// The sizes to run, nccl-tests' sequence from -b to -e by -f or -i.
std::vector<uint64_t> bench_sizes(const BenchOptions& o);

// Shared option parsing helpers (also used by validate).
uint64_t parse_size_flag(const std::string& flag, const std::string& text);
// Names in `app`'s help what each option takes ("BYTES", "N", "SEC"), by flag: values are
// read as text (nccl-tests' forms, our own messages), which help would call TEXT.
void name_option_values(CLI::App& app,
                        std::initializer_list<std::pair<const char*, const char*>> flag_types);
int64_t parse_int_flag(const std::string& flag, const std::string& text, int64_t min, int64_t max);
double parse_double_flag(const std::string& flag, const std::string& text, double min);
// -T/--timeout: seconds (units s, m, h, ms allowed), 0 = no limit.
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
double parse_timeout_flag(const std::string& flag, const std::string& text);
Launcher parse_launcher(const std::string& text);

}  // namespace ringside::bench
