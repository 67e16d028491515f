#include "validate/validate_command.h"

#include <spawn.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "bench/options.h"
#include "core/errors.h"
#include "core/world.h"
#include "validate/baseline.h"
#include "validate/evaluate.h"
#include "validate/nvml_health.h"
#include "validate/plan.h"
#include "validate/validate_output.h"

extern char** environ;

namespace ringside::bench {

namespace {

struct ValidateOptions {
  std::string baseline;
  std::string level = "quick";
  double threshold_pct = 10;
  bool drain = false;
  std::string json_file;
  std::vector<uint64_t> sizes;
  int iters = 10;
  int warmup = 2;
  WorldOptions world;
};

std::optional<ValidateOptions> parse_validate_options(int argc, char** argv) {
  ValidateOptions o;
  CLI::App app("nccl_bench validate: PASS/FAIL per node and per link", "nccl_bench validate");
  std::string threshold, sizes, iters, warmup, launcher = "auto";
  app.add_option("--baseline", o.baseline,
                 "JSON file of minimum bus bandwidths per GPU model, test and size");
  app.add_option("--level", o.level,
                 "quick: ring of node pairs; full: every node pair and a global all_reduce");
  app.add_option("--fleet-threshold", threshold,
                 "percent below the peers' median that fails (default 10)");
  app.add_flag("--drain", o.drain, "run the printed scontrol drain commands for failing nodes");
  app.add_option("--json", o.json_file, "write the verdict as JSON to this file");
  app.add_option("--sizes", sizes,
                 "comma-separated message sizes (default quick 64M, full 4M,64M)");
  app.add_option("-n,--iters", iters, "timed iterations per test and size (default 10)");
  app.add_option("-w,--warmup_iters", warmup, "warm-up iterations (default 2)");
  app.add_option("--rendezvous", o.world.rendezvous.file,
                 "shared file for the NCCL id without MPI/NCCL_COMM_ID");
  app.add_option("--launcher", launcher, "auto, mpi or env");
  std::vector<std::string> args;
  for (int k = argc - 1; k >= 2; --k) args.emplace_back(argv[k]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + "; run 'nccl_bench validate --help'");
  }
  if (o.level != "quick" && o.level != "full") {
    throw UsageError("--level '" + o.level + "': use quick or full");
  }
  if (!threshold.empty()) o.threshold_pct = parse_double_flag("--fleet-threshold", threshold, 0.0);
  if (o.threshold_pct >= 100)
    throw UsageError("--fleet-threshold " + threshold + " must be below 100");
  if (!iters.empty()) o.iters = static_cast<int>(parse_int_flag("-n", iters, 1, 1 << 20));
  if (!warmup.empty()) o.warmup = static_cast<int>(parse_int_flag("-w", warmup, 0, 1 << 20));
  o.world.launcher = parse_launcher(launcher);
  o.world.gpus_per_process = 1;
  if (!sizes.empty()) {
    size_t start = 0;
    while (start <= sizes.size()) {
      const size_t comma = sizes.find(',', start);
      const std::string item =
          sizes.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const uint64_t s = parse_size_flag("--sizes", item);
      if (s < 8) throw UsageError("--sizes " + item + ": sizes must be at least 8 bytes");
      o.sizes.push_back(s);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (o.level == "quick") {
    o.sizes = {64ull << 20};
  } else {
    o.sizes = {4ull << 20, 64ull << 20};
  }
  return o;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Times `issue` on one communicator: warm-up, then kRepeats blocks of `iters`
// ops; a block's time is its slowest member's, and the best block counts, so a
// passing hiccup elsewhere does not fail a healthy node while a slow one stays
// slow in every block.  Returns seconds per op (every member calls it).
constexpr int kRepeats = 3;

template <typename Issue>
double time_on(const CommStream& cs, int warmup, int iters, Issue&& issue) {
  RINGSIDE_CUDA_CHECK(cudaSetDevice(cs.device));
  for (int i = 0; i < warmup; ++i) issue();
  RINGSIDE_CUDA_CHECK(cudaStreamSynchronize(cs.stream));
  double best = 0;
  for (int rep = 0; rep < kRepeats; ++rep) {
    oob_barrier(std::span<const CommStream>(&cs, 1));
    const double t0 = now_seconds();
    for (int i = 0; i < iters; ++i) issue();
    RINGSIDE_CUDA_CHECK(cudaStreamSynchronize(cs.stream));
    const double local = (now_seconds() - t0) / iters;
    std::vector<std::vector<double>> v{{local}};
    const double slowest = oob_allreduce(std::span<const CommStream>(&cs, 1), v, ncclMax)[0][0];
    best = rep == 0 ? slowest : std::min(best, slowest);
  }
  return best;
}

double allreduce_busbw(const CommStream& cs, void* buf, uint64_t bytes, int warmup, int iters) {
  int n = 1;
  RINGSIDE_NCCL_CHECK(ncclCommCount(cs.comm, &n));
  const size_t count = bytes / sizeof(float);
  const double sec = time_on(cs, warmup, iters, [&] {
    RINGSIDE_NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, cs.comm, cs.stream));
  });
  return static_cast<double>(count * sizeof(float)) / 1e9 / sec * (2.0 * (n - 1) / n);
}

double sendrecv_busbw(const CommStream& cs, void* send, void* recv, uint64_t bytes, int peer,
                      int warmup, int iters) {
  const double sec = time_on(cs, warmup, iters, [&] {
    RINGSIDE_NCCL_CHECK(ncclGroupStart());
    RINGSIDE_NCCL_CHECK(ncclSend(send, bytes, ncclUint8, peer, cs.comm, cs.stream));
    RINGSIDE_NCCL_CHECK(ncclRecv(recv, bytes, ncclUint8, peer, cs.comm, cs.stream));
    RINGSIDE_NCCL_CHECK(ncclGroupEnd());
  });
  return static_cast<double>(bytes) / 1e9 / sec;
}

ncclComm_t split(const CommStream& world, int color, int key) {
  ncclComm_t c = nullptr;
  RINGSIDE_NCCL_CHECK(ncclCommSplit(world.comm, color, key, &c, nullptr));
  return c;
}

// Health text block exchanged between ranks: lines "F <reason>" / "W <warning>".
constexpr size_t kHealthBlock = 2048;

std::vector<std::byte> encode_health(const GpuHealth& h) {
  std::string text;
  for (const std::string& f : h.fail) text += "F " + f + "\n";
  for (const std::string& w : h.warn) text += "W " + w + "\n";
  if (text.size() >= kHealthBlock) text = text.substr(0, kHealthBlock - 5) + "...\n";
  std::vector<std::byte> b(kHealthBlock);
  std::memcpy(b.data(), text.data(), text.size());
  return b;
}

GpuHealth decode_health(const std::byte* p) {
  GpuHealth h;
  std::string text(reinterpret_cast<const char*>(p),
                   strnlen(reinterpret_cast<const char*>(p), kHealthBlock));
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(start, nl - start);
    if (line.size() > 2) (line[0] == 'F' ? h.fail : h.warn).push_back(line.substr(2));
    start = nl + 1;
  }
  return h;
}

int run_drains(const std::vector<std::vector<std::string>>& cmds) {
  int failures = 0;
  for (const auto& cmd : cmds) {
    std::vector<char*> argv;
    for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    int status = 0;
    const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
    if (rc != 0) {
      std::fprintf(stderr, "nccl_bench: cannot run scontrol: %s; is Slurm's scontrol in PATH?\n",
                   std::strerror(rc));
      ++failures;
      continue;
    }
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "nccl_bench: '%s' failed (status %d)\n", render_command(cmd).c_str(),
                   status);
      ++failures;
    }
  }
  return failures;
}

}  // namespace

int run_validate(int argc, char** argv) {
  auto opt = parse_validate_options(argc, argv);
  if (!opt) return 0;
  const ValidateOptions& o = *opt;
  std::optional<Baseline> baseline;
  if (!o.baseline.empty()) baseline = Baseline::load(o.baseline);

  World world(o.world, &argc, &argv);
  const double t_start = now_seconds();
  const auto& infos = world.rank_infos();
  const int nranks = world.nranks();
  const LocalRank& me = world.locals()[0];
  const CommStream& wcs = me.cs;
  const RankInfo& my_info = infos[static_cast<size_t>(me.rank)];
  // Before the load: XID events are only delivered after registration.
  GpuHealthSession health_session(my_info.bus_id, wcs.device);

  // Nodes in order of their first rank; each rank's index within its node.
  ValidateData d;
  std::map<std::string, int> node_index;
  std::vector<int> rank_node(static_cast<size_t>(nranks)), rank_slot(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const std::string name = infos[static_cast<size_t>(r)].node;
    auto [it, added] = node_index.emplace(name, static_cast<int>(d.nodes.size()));
    if (added) {
      d.nodes.push_back(name);
      d.models.push_back(infos[static_cast<size_t>(r)].gpu_name);
      d.gpus.push_back(0);
    }
    rank_node[static_cast<size_t>(r)] = it->second;
    rank_slot[static_cast<size_t>(r)] = d.gpus[static_cast<size_t>(it->second)]++;
  }
  d.sizes = o.sizes;
  const size_t nn = d.nodes.size(), ns = d.sizes.size();
  const int my_node = rank_node[static_cast<size_t>(me.rank)];
  const int my_slot = rank_slot[static_cast<size_t>(me.rank)];
  int gmax = 0;
  for (int g : d.gpus) gmax = std::max(gmax, g);
  const bool full = o.level == "full";
  const std::vector<Round> rounds =
      full ? all_pairs_rounds(static_cast<int>(nn)) : ring_rounds(static_cast<int>(nn));

  // Measurement slots: [intra ns][global ns][round r: ns].
  const size_t global_base = ns, rounds_base = 2 * ns;
  std::vector<double> mine(rounds_base + rounds.size() * ns, NAN);
  uint64_t max_size = 0;
  for (uint64_t s : d.sizes) max_size = std::max(max_size, s);
  void* send = nullptr;
  void* recv = nullptr;
  RINGSIDE_CUDA_CHECK(cudaSetDevice(wcs.device));
  RINGSIDE_CUDA_CHECK(cudaMalloc(&send, max_size));
  RINGSIDE_CUDA_CHECK(cudaMalloc(&recv, max_size));
  RINGSIDE_CUDA_CHECK(cudaMemset(send, 1, max_size));
  RINGSIDE_CUDA_CHECK(cudaMemset(recv, 0, max_size));

  // 1. Intra-node all_reduce, every node at once.
  {
    ncclComm_t node = split(wcs, my_node, me.rank);
    const CommStream ncs{node, wcs.stream, wcs.device};
    if (d.gpus[static_cast<size_t>(my_node)] > 1) {
      for (size_t s = 0; s < ns; ++s)
        mine[s] = allreduce_busbw(ncs, send, d.sizes[s], o.warmup, o.iters);
    }
    ncclCommDestroy(node);
  }
  // 2. Global all_reduce (full).
  if (full && nn > 1) {
    for (size_t s = 0; s < ns; ++s)
      mine[global_base + s] = allreduce_busbw(wcs, send, d.sizes[s], o.warmup, o.iters);
  }
  // 3. Node pairs, one round at a time; within a pair, one 2-rank comm per rail
  //    (local GPU index), all rails and pairs of a round concurrently.
  for (size_t r = 0; r < rounds.size(); ++r) {
    int color = NCCL_SPLIT_NOCOLOR;
    for (size_t p = 0; p < rounds[r].pairs.size(); ++p) {
      const NodePair& np = rounds[r].pairs[p];
      if (np.first != my_node && np.second != my_node) continue;
      const int rails =
          std::min(d.gpus[static_cast<size_t>(np.first)], d.gpus[static_cast<size_t>(np.second)]);
      if (my_slot < rails) {
        color = static_cast<int>(p) * gmax + my_slot;
      }
    }
    ncclComm_t rail = split(wcs, color, me.rank);
    if (rail != nullptr) {
      int my_comm_rank = 0;
      RINGSIDE_NCCL_CHECK(ncclCommUserRank(rail, &my_comm_rank));
      const CommStream rcs{rail, wcs.stream, wcs.device};
      for (size_t s = 0; s < ns; ++s) {
        mine[rounds_base + r * ns + s] =
            sendrecv_busbw(rcs, send, recv, d.sizes[s], 1 - my_comm_rank, o.warmup, o.iters);
      }
      ncclCommDestroy(rail);
    }
  }
  RINGSIDE_CUDA_CHECK(cudaFree(send));
  RINGSIDE_CUDA_CHECK(cudaFree(recv));

  // 4. NVML health after the load, so links and clocks are in their working state.
  const GpuHealth health =
      health_session.finish("GPU " + std::to_string(wcs.device) + " (" + my_info.bus_id + ")");

  // 5. Everyone gets everything and evaluates the same way.
  std::vector<std::byte> block(mine.size() * sizeof(double));
  std::memcpy(block.data(), mine.data(), block.size());
  const std::vector<std::byte> all_meas = oob_allgather(world.comm_streams(), {block});
  const std::vector<std::byte> all_health =
      oob_allgather(world.comm_streams(), {encode_health(health)});
  auto meas = [&](int rank, size_t slot) {
    double v;
    std::memcpy(&v,
                all_meas.data() + (static_cast<size_t>(rank) * mine.size() + slot) * sizeof(double),
                sizeof v);
    return v;
  };

  d.intra.assign(nn, std::vector<double>(ns, NAN));
  d.health_fail.assign(nn, {});
  d.health_warn.assign(nn, {});
  for (int r = 0; r < nranks; ++r) {
    const size_t n = static_cast<size_t>(rank_node[static_cast<size_t>(r)]);
    for (size_t s = 0; s < ns; ++s) {
      const double v = meas(r, s);
      if (!std::isnan(v))
        d.intra[n][s] = std::isnan(d.intra[n][s]) ? v : std::min(d.intra[n][s], v);
    }
    const GpuHealth h = decode_health(all_health.data() + static_cast<size_t>(r) * kHealthBlock);
    for (const std::string& f : h.fail) d.health_fail[n].push_back(f);
    for (const std::string& w : h.warn) d.health_warn[n].push_back(w);
  }
  if (full && nn > 1) {
    d.global.assign(ns, NAN);
    for (size_t s = 0; s < ns; ++s) d.global[s] = meas(0, global_base + s);
  }
  for (size_t r = 0; r < rounds.size(); ++r) {
    for (const NodePair& np : rounds[r].pairs) {
      PairResult pr;
      pr.nodes = np;
      const int rails =
          std::min(d.gpus[static_cast<size_t>(np.first)], d.gpus[static_cast<size_t>(np.second)]);
      pr.busbw.assign(ns, NAN);
      pr.rails.assign(ns, std::vector<double>(static_cast<size_t>(rails), NAN));
      for (int rank = 0; rank < nranks; ++rank) {
        const int n = rank_node[static_cast<size_t>(rank)];
        const int slot = rank_slot[static_cast<size_t>(rank)];
        if ((n != np.first && n != np.second) || slot >= rails) continue;
        for (size_t s = 0; s < ns; ++s) {
          const double v = meas(rank, rounds_base + r * ns + s);
          double& cell = pr.rails[s][static_cast<size_t>(slot)];
          if (!std::isnan(v)) cell = std::isnan(cell) ? v : std::min(cell, v);
        }
      }
      for (size_t s = 0; s < ns; ++s) {
        for (double v : pr.rails[s]) {
          if (!std::isnan(v)) pr.busbw[s] = std::isnan(pr.busbw[s]) ? v : std::max(pr.busbw[s], v);
        }
      }
      d.pairs.push_back(std::move(pr));
    }
  }

  const Verdict verdict = evaluate(d, baseline ? &*baseline : nullptr, o.threshold_pct);
  ValidateRunInfo info;
  info.level = o.level;
  info.threshold_pct = o.threshold_pct;
  info.baseline = o.baseline;
  info.nranks = nranks;
  info.seconds = now_seconds() - t_start;
  info.rounds = static_cast<int>(rounds.size());
  int code = verdict.pass ? 0 : 1;
  if (world.is_root_process()) {
    std::fputs(render_tables(d, verdict, info).c_str(), stdout);
    const auto drains = drain_commands(d, verdict);
    for (const auto& c : drains) std::printf("%s\n", render_command(c).c_str());
    std::fflush(stdout);
    if (!o.json_file.empty()) {
      std::ofstream out(o.json_file, std::ios::trunc);
      out << render_json(d, verdict, info);
      if (!out) throw RuntimeError("cannot write --json file '" + o.json_file + "'");
    }
    if (o.drain && !drains.empty() && run_drains(drains) > 0) code = 2;
  }
  return code;
}

}  // namespace ringside::bench
