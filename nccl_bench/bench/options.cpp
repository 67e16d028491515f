#include "bench/options.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <limits>

#include "core/errors.h"
#include "ringside/config_spec.h"

namespace ringside::bench {

uint64_t parse_size_flag(const std::string& flag, const std::string& text) {
  auto v = config::parse_bytes(text);
  if (!v.ok()) {
    throw UsageError(flag + ": " + v.message());
  }
  return *v;
}

namespace {

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string range_text(int64_t min, int64_t max) {
  return "give a whole number from " + std::to_string(min) + " to " + std::to_string(max);
}

// Checks `text` as an integer in [min, max]; "" when it is one.
std::string check_int(const std::string& text, int64_t min, int64_t max) {
  auto v = config::parse_int(text);
  if (!v.ok()) return "'" + text + "' is not a whole number; " + range_text(min, max);
  if (*v < min || *v > max) return text + " is out of range; " + range_text(min, max);
  return {};
}

// A whole-number option of type T, checked against [min, max] as text first.
template <typename T>
CLI::Option* add_whole_option(CLI::App& app, const std::string& names, T& value, int64_t min,
                              int64_t max, const std::string& description) {
  return app.add_option(names, value, description)
      ->check(CLI::Validator([min, max](std::string& t) { return check_int(t, min, max); }, "",
                             "int range"))
      ->type_name("INT")
      ->capture_default_str();
}

}  // namespace

CLI::Option* add_int_option(CLI::App& app, const std::string& names, int& value, int min, int max,
                            const std::string& description) {
  return add_whole_option(app, names, value, min, max, description);
}

CLI::Option* add_uint_option(CLI::App& app, const std::string& names, uint64_t& value, uint64_t min,
                             uint64_t max, const std::string& description) {
  return add_whole_option(app, names, value, static_cast<int64_t>(min), static_cast<int64_t>(max),
                          description);
}

CLI::Option* add_double_option(CLI::App& app, const std::string& names, double& value, double min,
                               const std::string& description) {
  auto check = [min](std::string& t) -> std::string {
    auto v = config::parse_double(t);
    if (!v.ok()) return "'" + t + "' is not a number: " + v.message();
    if (!(*v >= min)) return t + " is out of range; give a number >= " + number_text(min);
    return {};
  };
  return app.add_option(names, value, description)
      ->check(CLI::Validator(check, "", "number"))
      ->type_name("NUM")
      ->capture_default_str();
}

CLI::Option* add_size_option(CLI::App& app, const std::string& names, uint64_t& value,
                             const std::string& shown, const std::string& description) {
  // Rewrites "8M" as the number of bytes before CLI11 converts it.
  auto to_bytes = [](std::string& t) -> std::string {
    auto v = config::parse_bytes(t);
    if (!v.ok()) return v.message();
    t = std::to_string(*v);
    return {};
  };
  return app.add_option(names, value, description)
      ->transform(CLI::Validator(to_bytes, "", "size"))
      ->type_name("BYTES")
      ->default_str(shown);
}

CLI::Option* add_timeout_option(CLI::App& app, double& value) {
  auto to_seconds = [](std::string& t) -> std::string {
    auto v = config::parse_seconds(t);
    if (!v.ok()) {
      return "'" + t + "': " + v.message() +
             "; give seconds (e.g. 600, 90s, 10m), or 0 for no time limit";
    }
    if (*v < 0 || *v > kMaxTimeoutSeconds) {
      return t + " is out of range; use 0 (no time limit) to " +
             std::to_string(static_cast<int>(kMaxTimeoutSeconds)) + " seconds";
    }
    t = number_text(*v);
    return {};
  };
  return app
      .add_option("-T,--timeout", value,
                  "give up a wait for the GPUs after this long and name the op that hung (units "
                  "s m h ms; 0: never)")
      ->transform(CLI::Validator(to_seconds, "", "seconds"))
      ->type_name("SECONDS")
      ->capture_default_str();
}

bool parse_command_line(CLI::App& app, int argc, char** argv, int first, const std::string& usage) {
  std::vector<std::string> args;  // CLI11 takes them last first
  for (int k = argc - 1; k >= first; --k) args.emplace_back(argv[k]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return false;
  } catch (const CLI::ExtrasError&) {
    // CLI11's own message lists them last first when given a vector.
    std::string extras;
    for (const std::string& a : app.remaining()) extras += (extras.empty() ? "" : " ") + a;
    throw UsageError("unexpected argument" + std::string(app.remaining().size() > 1 ? "s" : "") +
                     ": " + extras + "; run '" + usage + " --help' for the flags");
  } catch (const CLI::ParseError& err) {
    throw UsageError(std::string(err.what()) + "; run '" + usage + " --help'");
  }
  return true;
}

Launcher parse_launcher(const std::string& text) {
  if (text == "auto") return Launcher::kAuto;
  if (text == "mpi") return Launcher::kMpi;
  if (text == "env") return Launcher::kEnv;
  throw UsageError("--launcher '" + text + "': use auto, mpi or env");
}

namespace {

constexpr int kIntMax = std::numeric_limits<int>::max();

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

// nccl-tests flags nccl_bench does not take, and why; anything else unknown is
// CLI11's "unexpected argument".
struct Refused {
  const char* flag;
  const char* why;
};
constexpr Refused kRefused[] = {
    {"-F", "is not an nccl-tests flag (nccl-tests 2.19 has no -F)"},
    {"-y", "(--stream_null) is not implemented: every rank uses its own non-blocking stream"},
    {"-C", "(--report_cputime) is not implemented"},
    {"-R", "(--local_register) is not implemented: buffers are not registered"},
    {"-x", "(--cta_policy) is not implemented"},
    {"-D", "(--device_implementation) needs device kernels, which nccl_bench does not have"},
    {"-V", "(--device_cta_count) needs device kernels, which nccl_bench does not have"},
    {"-M", "(--memory) is not implemented"},
    {"-u", "(--unalign) is not implemented: buffers start aligned (the table shows unalign: 0)"},
};

void refuse_unsupported(int argc, char** argv, int first) {
  for (int k = first; k < argc; ++k) {
    const std::string_view a = argv[k];
    for (const Refused& r : kRefused) {
      if (a.substr(0, 2) == r.flag) {
        throw UsageError(std::string(r.flag) + " " + r.why +
                         "; see docs/nccl_bench.md for the flags nccl_bench takes");
      }
    }
  }
}

}  // namespace

std::optional<BenchOptions> parse_bench_options(const std::string& collective, int argc,
                                                char** argv, int first) {
  BenchOptions o;
  o.collective = find_collective(collective);
  if (o.collective == nullptr) {
    std::string names;
    for (const Collective* c : all_collectives())
      names += std::string(names.empty() ? "" : ", ") + c->name;
    throw UsageError("unknown collective '" + collective + "'; use one of: " + names +
                     ", or 'validate'");
  }
  o.command_line = join_args(argc, argv);
  refuse_unsupported(argc, argv, first);

  const std::string usage = "nccl_bench " + collective;
  CLI::App app("nccl_bench " + collective + ": nccl-tests compatible benchmark", usage);
  app.allow_extras(false);
  std::string op = "sum", d = "float", r = "0", launcher = "auto";
  int per_iter = 0, timestamps = 0, parallel = 0;
  std::optional<double> min_bw;
  o.step_factor = 0;  // shown in --help as "not given"
  add_size_option(app, "-b,--minbytes", o.min_bytes, "32M", "smallest size");
  add_size_option(app, "-e,--maxbytes", o.max_bytes, "32M", "largest size");
  add_size_option(app, "-i,--stepbytes", o.step_bytes, "1M", "size increment when -f is not given");
  auto* factor = add_uint_option(app, "-f,--stepfactor", o.step_factor, 0, 1 << 20,
                                 "multiplication factor between sizes (>= 2); not given: grow "
                                 "by -i");
  factor->default_str("");
  add_int_option(app, "-n,--iters", o.iters, 1, kIntMax, "timed iterations per size");
  add_int_option(app, "-w,--warmup_iters", o.warmup_iters, 0, kIntMax,
                 "warm-up iterations (not timed)");
  add_int_option(app, "-m,--agg_iters", o.agg_iters, 1, 1 << 16,
                 "operations aggregated in one NCCL group per iteration");
  add_int_option(app, "-N,--run_cycles", o.run_cycles, 0, kIntMax,
                 "passes over the sizes, each printed; 0: until interrupted");
  add_int_option(app, "-c,--check", o.check_iters, 0, kIntMax,
                 "check iterations per size (0 disables the data check)");
  app.add_option("-o,--op", op, "reduction op: sum|prod|max|min|avg|mulsum|all")
      ->type_name("OP")
      ->capture_default_str();
  app.add_option("-d,--datatype", d, "datatype (nccl-tests names) or all")
      ->type_name("TYPE")
      ->capture_default_str();
  app.add_option("-r,--root", r, "root rank for rooted collectives, or all")
      ->type_name("RANK")
      ->capture_default_str();
  add_int_option(app, "-g,--ngpus", o.gpus_per_process, 1, 64, "GPUs (ranks) per thread");
  add_int_option(app, "-t,--nthreads", o.threads, 1, 64,
                 "threads per process, each driving -g GPUs");
  add_int_option(app, "-p,--parallel_init", parallel, 0, 1,
                 "1: each -t thread creates its own communicators, concurrently");
  add_int_option(app, "-a,--average", o.average, 0, 3,
                 "time reported across ranks: 0=rank 0, 1=average, 2=min, 3=max");
  add_int_option(app, "-z,--blocking", o.blocking, 0, 3,
                 "0 async, 1 sync+barrier per op, 2 sync per op, 3 sync+barrier per iteration");
  add_int_option(app, "-G,--cudagraph", o.graph_launches, 0, kIntMax,
                 "capture the iterations in a CUDA graph and launch it N times");
  add_int_option(app, "-I,--per_iter_timing", per_iter, 0, 1,
                 "1: time every iteration with CUDA events; adds min, max, p99 and cv% columns");
  add_int_option(app, "-K,--per_iter_skip", o.per_iter_skip, 0, kIntMax,
                 "leading iterations left out of the -I columns");
  add_int_option(app, "-S,--report_timestamps", timestamps, 0, 1,
                 "1: end each row with the time it was printed");
  add_timeout_option(app, o.world.timeout_seconds);
  app.add_option("-J,--json,--output_file", o.json_file,
                 "write results as JSON to this file (rank 0)")
      ->type_name("FILE");
  app.add_option("--trace-dir", o.trace_dir,
                 "write one ringside trace per rank into this directory")
      ->type_name("DIR");
  double min_bw_value = 0;
  auto* min_bw_opt =
      add_double_option(app, "--min-busbw", min_bw_value, 0.0,
                        "fail (exit 1) when the average bus bandwidth is below this many GB/s");
  min_bw_opt->default_str("");
  app.add_option(
         "--rendezvous", o.world.rendezvous.file,
         "without MPI and NCCL_COMM_ID: shared file through which rank 0 publishes the NCCL id")
      ->type_name("FILE");
  app.add_option("--launcher", launcher, "auto (MPI when started by mpirun/PMIx), mpi or env")
      ->type_name("MODE")
      ->capture_default_str();

  if (!parse_command_line(app, argc, argv, first, usage)) return std::nullopt;

  if (min_bw_opt->count() > 0) o.min_busbw = min_bw_value;
  if (factor->count() > 0 && o.step_factor < 2) {
    // nccl-tests reads 0 and 1 as "no factor"; the documented rule is >= 2.
    throw UsageError("-f " + std::to_string(o.step_factor) +
                     ": the step factor multiplies each size to get the next and must be at "
                     "least 2; to grow sizes by a fixed increment leave out -f and give -i");
  }
  if (o.step_factor == 0) o.step_factor = 1;  // not given: step by -i
  o.per_iter_timing = per_iter == 1;
  o.report_timestamps = timestamps == 1;
  o.parallel_init = parallel == 1;
  if (o.threads * o.gpus_per_process > 64) {
    throw UsageError("-t " + std::to_string(o.threads) + " x -g " +
                     std::to_string(o.gpus_per_process) +
                     " asks for more than 64 GPUs in one process; lower -t or -g");
  }
  o.world.launcher = parse_launcher(launcher);
  o.world.gpus_per_process = o.threads * o.gpus_per_process;
  o.world.threads = o.threads;
  o.world.parallel_init = o.parallel_init;

  if (r == "all") {
    o.root = -1;
  } else if (const std::string bad = check_int(r, 0, kIntMax); !bad.empty()) {
    throw UsageError("-r " + bad + ", or all");
  } else {
    o.root = static_cast<int>(*config::parse_int(r));
  }
  if (d == "all") {
    for (const DataType& dt : all_dtypes()) o.dtypes.push_back(&dt);
  } else if (const DataType* dt = find_dtype(d)) {
    o.dtypes.push_back(dt);
  } else {
    throw UsageError("-d '" + d + "' is not a datatype; use " + std::string(dtype_choices()));
  }
  if (op == "all") {
    for (const RedOp& ro : all_redops()) o.ops.push_back(&ro);
  } else if (const RedOp* ro = find_redop(op == "premulsum" ? "mulsum" : op)) {
    o.ops.push_back(ro);
  } else {
    throw UsageError("-o '" + op + "' is not a reduction op; use " + std::string(redop_choices()));
  }
  if (o.min_bytes > o.max_bytes) {
    throw UsageError("-b " + std::to_string(o.min_bytes) + " is larger than -e " +
                     std::to_string(o.max_bytes) + "; give a minimum size <= the maximum");
  }
  if (o.step_factor <= 1 && o.step_bytes == 0 && o.min_bytes != o.max_bytes) {
    throw UsageError("-i 0 without -f never reaches -e; give -i > 0 or -f >= 2");
  }
  if (o.step_factor > 1 && o.min_bytes == 0) {
    throw UsageError("-b 0 with -f never grows; start at -b 1 or more, or use -i");
  }
  if (o.graph_launches > 0 && o.blocking != 0) {
    throw UsageError("-z " + std::to_string(o.blocking) +
                     " cannot be combined with -G; use -z 0 with graphs");
  }
  if (o.per_iter_timing && o.graph_launches > 0) {
    throw UsageError(
        "-I 1 cannot be combined with -G: a graph's iterations are not timed one by "
        "one; leave out one of them");
  }
  if (o.per_iter_skip > 0 && !o.per_iter_timing) {
    throw UsageError("-K " + std::to_string(o.per_iter_skip) +
                     " skips iterations of the -I columns; give -I 1 with it");
  }
  if (o.per_iter_skip >= o.iters) {
    throw UsageError("-K " + std::to_string(o.per_iter_skip) + " leaves none of the " +
                     std::to_string(o.iters) + " iterations (-n); give -K below -n");
  }
  return o;
}

std::vector<uint64_t> bench_sizes(const BenchOptions& o) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = o.min_bytes; s <= o.max_bytes;) {
    sizes.push_back(s);
    // The next size, unless it would pass -e (checked before it could overflow).
    if (o.step_factor > 1) {
      if (s == 0 || s > o.max_bytes / o.step_factor) break;
      s *= o.step_factor;
    } else {
      if (o.step_bytes == 0 || o.step_bytes > o.max_bytes - s) break;  // -i 0 with -b == -e
      s += o.step_bytes;
    }
  }
  return sizes;
}

}  // namespace ringside::bench
