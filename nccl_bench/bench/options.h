// Command-line options of `nccl_bench <collective>`: nccl-tests' flags with the
// same names and meanings, plus ringside's output and launch options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/collective.h"
#include "core/world.h"

namespace CLI {
class App;
class Option;
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
  int run_cycles = 1;                   // -N: passes over the sizes, 0 = until stopped
  bool per_iter_timing = false;         // -I: per-iteration CUDA event times, summary columns
  int per_iter_skip = 0;                // -K: leading iterations left out of the -I summary
  bool report_timestamps = false;       // -S: a timestamp ends each row
  bool parallel_init = false;           // -p: each -t thread creates its communicators
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

// Typed options shared with validate.  Each takes its variable, whose value
// is the default shown in --help; a malformed or out-of-range value is a parse
// error naming the option and the accepted range.
uint64_t parse_size_flag(const std::string& flag, const std::string& text);
// A whole number from `min` to `max`.
CLI::Option* add_int_option(CLI::App& app, const std::string& names, int& value, int min, int max,
                            const std::string& description);
CLI::Option* add_uint_option(CLI::App& app, const std::string& names, uint64_t& value, uint64_t min,
                             uint64_t max, const std::string& description);
// A number >= `min`.
CLI::Option* add_double_option(CLI::App& app, const std::string& names, double& value, double min,
                               const std::string& description);
// Bytes with an optional K/M/G/T suffix (powers of 1024); `shown` is the default for --help.
CLI::Option* add_size_option(CLI::App& app, const std::string& names, uint64_t& value,
                             const std::string& shown, const std::string& description);
// -T/--timeout: seconds (units s, m, h, ms allowed), 0 = no limit.
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
CLI::Option* add_timeout_option(CLI::App& app, double& value);
Launcher parse_launcher(const std::string& text);
// Parses argv[first..argc) into `app`.  Returns false when --help was printed; a
// bad command line is a UsageError ending in "run '<usage> --help'".
bool parse_command_line(CLI::App& app, int argc, char** argv, int first, const std::string& usage);

}  // namespace ringside::bench
