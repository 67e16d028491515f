#include "bench/options.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <limits>

#include "core/errors.h"
#include "ringside/config_spec.h"

namespace ringside::bench {

void name_option_values(CLI::App& app,
                        std::initializer_list<std::pair<const char*, const char*>> flag_types) {
  for (const auto& [flag, type] : flag_types) {
    for (CLI::Option* opt : app.get_options()) {
      if (opt->check_name(flag)) opt->type_name(type);
    }
  }
}

uint64_t parse_size_flag(const std::string& flag, const std::string& text) {
  auto v = config::parse_bytes(text);
  if (!v.ok()) {
    throw UsageError(flag + ": " + v.message());
  }
  return *v;
}

int64_t parse_int_flag(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  auto v = config::parse_int(text);
  if (!v.ok()) throw UsageError(flag + " '" + text + "' is not an integer: " + v.message());
  if (*v < min || *v > max) {
    throw UsageError(flag + " " + text + " is out of range; use a value from " +
                     std::to_string(min) + " to " + std::to_string(max));
  }
  return *v;
}

double parse_double_flag(const std::string& flag, const std::string& text, double min) {
  auto v = config::parse_double(text);
  if (!v.ok()) throw UsageError(flag + " '" + text + "' is not a number: " + v.message());
  if (!(*v >= min)) throw UsageError(flag + " " + text + " must be >= " + std::to_string(min));
  return *v;
}

double parse_timeout_flag(const std::string& flag, const std::string& text) {
  auto v = config::parse_seconds(text);
  if (!v.ok()) {
    throw UsageError(flag + " '" + text + "': " + v.message() +
                     "; give seconds (e.g. 600, 90s, 10m), or 0 for no time limit");
  }
  if (*v < 0 || *v > kMaxTimeoutSeconds) {
    throw UsageError(flag + " " + text + " is out of range; use 0 (no time limit) to " +
                     std::to_string(static_cast<int>(kMaxTimeoutSeconds)) + " seconds");
  }
  return *v;
}

Launcher parse_launcher(const std::string& text) {
  if (text == "auto") return Launcher::kAuto;
  if (text == "mpi") return Launcher::kMpi;
  if (text == "env") return Launcher::kEnv;
  throw UsageError("--launcher '" + text + "': use auto, mpi or env");
}

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
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

  CLI::App app("nccl_bench " + collective + ": nccl-tests compatible benchmark",
               "nccl_bench " + collective);
  app.allow_extras(false);
  std::string b, e, i, f, n, w, m, c, op = "sum", d = "float", r, g, t, a, z, G, T, min_bw,
                                      launcher = "auto";
  app.add_option("-b,--minbytes", b, "minimum size in bytes (K/M/G/T suffixes), default 32M");
  app.add_option("-e,--maxbytes", e, "maximum size in bytes, default 32M");
  app.add_option("-i,--stepbytes", i, "fixed size increment when -f is not given, default 1M");
  app.add_option("-f,--stepfactor", f,
                 "multiplication factor between sizes (integer >= 2); without it sizes grow by -i");
  app.add_option("-n,--iters", n, "timed iterations per size, default 20");
  app.add_option("-w,--warmup_iters", w, "warm-up iterations (not timed), default 1");
  app.add_option("-m,--agg_iters", m,
                 "operations aggregated in one NCCL group per iteration, default 1");
  app.add_option("-c,--check", c,
                 "check iterations per size (0 disables the data check), default 1");
  app.add_option("-o,--op", op, "reduction op: sum|prod|max|min|avg|all, default sum");
  app.add_option("-d,--datatype", d, "datatype (nccl-tests names) or all, default float");
  app.add_option("-r,--root", r, "root rank for rooted collectives, or all, default 0");
  app.add_option("-g,--ngpus", g, "GPUs (ranks) per thread, default 1");
  app.add_option("-t,--nthreads", t, "threads per process, each driving -g GPUs; default 1");
  app.add_option("-a,--average", a,
                 "time reported across ranks: 0=rank 0, 1=average, 2=min, 3=max; default 1");
  app.add_option("-z,--blocking", z,
                 "0 async, 1 sync+barrier per op, 2 sync per op, 3 sync+barrier per iteration");
  app.add_option("-G,--cudagraph", G,
                 "capture the iterations in a CUDA graph and launch it N times");
  app.add_option("-T,--timeout", T,
                 "give up a wait for the GPUs after this many seconds (0: never), default 600");
  app.add_option("-J,--json,--output_file", o.json_file,
                 "write results as JSON to this file (rank 0)");
  app.add_option("--trace-dir", o.trace_dir,
                 "write one ringside trace per rank into this directory");
  app.add_option("--min-busbw", min_bw,
                 "fail (exit 1) when the average bus bandwidth is below this many GB/s");
  app.add_option(
      "--rendezvous", o.world.rendezvous.file,
      "without MPI and NCCL_COMM_ID: shared file through which rank 0 publishes the NCCL id");
  app.add_option("--launcher", launcher, "auto (MPI when started by mpirun/PMIx), mpi or env");
  name_option_values(app, {{"-b", "BYTES"},
                           {"-e", "BYTES"},
                           {"-i", "BYTES"},
                           {"-f", "N"},
                           {"-n", "N"},
                           {"-w", "N"},
                           {"-m", "N"},
                           {"-c", "N"},
                           {"-o", "OP"},
                           {"-d", "TYPE"},
                           {"-r", "RANK"},
                           {"-g", "N"},
                           {"-t", "N"},
                           {"-a", "0-3"},
                           {"-z", "0-3"},
                           {"-G", "N"},
                           {"-T", "SEC"},
                           {"-J", "FILE"},
                           {"--trace-dir", "DIR"},
                           {"--min-busbw", "GBPS"},
                           {"--rendezvous", "FILE"},
                           {"--launcher", "MODE"}});

  std::vector<std::string> args;
  for (int k = argc - 1; k >= first; --k) args.emplace_back(argv[k]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& err) {
    throw UsageError(std::string(err.what()) + "; run 'nccl_bench " + collective + " --help'");
  }

  if (!b.empty()) o.min_bytes = parse_size_flag("-b", b);
  if (!e.empty()) o.max_bytes = parse_size_flag("-e", e);
  if (!i.empty()) o.step_bytes = parse_size_flag("-i", i);
  if (!f.empty()) {
    // nccl-tests reads 0 and 1 as "no factor"; the documented rule is >= 2.
    if (auto v = config::parse_int(f); v.ok() && *v < 2) {
      throw UsageError("-f " + f +
                       ": the step factor multiplies each size to get the next and must be at "
                       "least 2; to grow sizes by a fixed increment leave out -f and give -i");
    }
    o.step_factor = static_cast<uint64_t>(parse_int_flag("-f", f, 2, 1 << 20));
  }
  if (!n.empty()) o.iters = static_cast<int>(parse_int_flag("-n", n, 1, kIntMax));
  if (!w.empty()) o.warmup_iters = static_cast<int>(parse_int_flag("-w", w, 0, kIntMax));
  if (!m.empty()) o.agg_iters = static_cast<int>(parse_int_flag("-m", m, 1, 1 << 16));
  if (!c.empty()) o.check_iters = static_cast<int>(parse_int_flag("-c", c, 0, kIntMax));
  if (!g.empty()) o.gpus_per_process = static_cast<int>(parse_int_flag("-g", g, 1, 64));
  if (!t.empty()) o.threads = static_cast<int>(parse_int_flag("-t", t, 1, 64));
  if (o.threads * o.gpus_per_process > 64) {
    throw UsageError("-t " + std::to_string(o.threads) + " x -g " +
                     std::to_string(o.gpus_per_process) +
                     " asks for more than 64 GPUs in one process; lower -t or -g");
  }
  if (!a.empty()) o.average = static_cast<int>(parse_int_flag("-a", a, 0, 3));
  if (!z.empty()) o.blocking = static_cast<int>(parse_int_flag("-z", z, 0, 3));
  if (!G.empty()) o.graph_launches = static_cast<int>(parse_int_flag("-G", G, 0, kIntMax));
  if (!T.empty()) o.world.timeout_seconds = parse_timeout_flag("-T", T);
  if (!min_bw.empty()) o.min_busbw = parse_double_flag("--min-busbw", min_bw, 0.0);
  o.world.launcher = parse_launcher(launcher);
  o.world.gpus_per_process = o.threads * o.gpus_per_process;

  if (!r.empty()) o.root = r == "all" ? -1 : static_cast<int>(parse_int_flag("-r", r, 0, kIntMax));
  if (d == "all") {
    for (const DataType& dt : all_dtypes()) o.dtypes.push_back(&dt);
  } else if (const DataType* dt = find_dtype(d)) {
    o.dtypes.push_back(dt);
  } else {
    throw UsageError("-d '" + d + "' is not a datatype; use " + std::string(dtype_choices()));
  }
  if (op == "all") {
    for (const RedOp& ro : all_redops()) o.ops.push_back(&ro);
  } else if (const RedOp* ro = find_redop(op)) {
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
  if (o.graph_launches > 0 && o.blocking == 3) {
    throw UsageError("-z 3 cannot be combined with -G (a graph has no per-iteration barrier)");
  }
  if (o.graph_launches > 0 && o.blocking != 0) {
    throw UsageError("-z " + std::to_string(o.blocking) +
                     " cannot be combined with -G; use -z 0 with graphs");
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
