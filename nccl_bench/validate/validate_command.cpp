#include "validate/validate_command.h"

#include <spawn.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
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
#include "validate/default_floors.h"
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
  bool no_default_floors = false;
  std::string json_file;
  std::vector<uint64_t> sizes;
  int iters = 10;
  int warmup = 2;
  WorldOptions world;
};

std::optional<ValidateOptions> parse_validate_options(int argc, char** argv) {
  ValidateOptions o;
  CLI::App app("nccl_bench validate: PASS/FAIL per node and per link", "nccl_bench validate");
  std::string sizes, launcher = "auto";
  app.add_option("--baseline", o.baseline,
                 "JSON file of minimum bus bandwidths per GPU model, test and size")
      ->type_name("FILE");
  app.add_flag("--no-default-floors", o.no_default_floors,
               "leave out the built-in floor table (only --baseline floors apply)");
  app.add_option("--level", o.level,
                 "quick: ring of node pairs; full: every node pair and a global all_reduce")
      ->type_name("LEVEL")
      ->capture_default_str();
  add_double_option(app, "--fleet-threshold", o.threshold_pct, 0.0,
                    "percent below the peers' median that fails");
  app.add_flag("--drain", o.drain, "run the printed scontrol drain commands for failing nodes");
  app.add_option("--json", o.json_file, "write the verdict as JSON to this file")
      ->type_name("FILE");
  app.add_option("--sizes", sizes, "comma-separated message sizes (default quick 64M, full 4M,64M)")
      ->type_name("BYTES,...");
  add_int_option(app, "-n,--iters", o.iters, 1, 1 << 20, "timed iterations per test and size");
  add_int_option(app, "-w,--warmup_iters", o.warmup, 0, 1 << 20, "warm-up iterations");
  add_timeout_option(app, o.world.timeout_seconds);
  app.add_option("--rendezvous", o.world.rendezvous.file,
                 "shared file for the NCCL id without MPI/NCCL_COMM_ID")
      ->type_name("FILE");
  app.add_option("--launcher", launcher, "auto, mpi or env")
      ->type_name("MODE")
      ->capture_default_str();
  if (!parse_command_line(app, argc, argv, 2, "nccl_bench validate")) return std::nullopt;
  if (o.level != "quick" && o.level != "full") {
    throw UsageError("--level '" + o.level + "': use quick or full");
  }
  if (o.threshold_pct >= 100) {
    throw UsageError("--fleet-threshold " + std::to_string(o.threshold_pct) + " must be below 100");
  }
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
// Passes over the node pairs and over each node's GPU pairs, and as many again to
// confirm a slow one.
constexpr int kPairPasses = 8;

struct Timing {
  double sec = 0;     // per op, the best block
  double spread = 0;  // worst block over best, minus 1: how well the reading repeats
};

template <typename Issue>
Timing time_on(Watchdog& wd, const CommStream& cs, const std::string& what, int warmup, int iters,
               int repeats, Issue&& issue) {
  const std::span<const CommStream> one(&cs, 1);
  RINGSIDE_CUDA_CHECK(cudaSetDevice(cs.device));
  for (int i = 0; i < warmup; ++i) issue();
  wd.wait(one, what, "warm-up");
  double best = 0, worst = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    oob_barrier(wd, one, what);
    const double t0 = now_seconds();
    for (int i = 0; i < iters; ++i) issue();
    wd.wait(one, what, {}, true);
    const double local = (now_seconds() - t0) / iters;
    std::vector<std::vector<double>> v{{local}};
    const double slowest = oob_allreduce(wd, one, v, ncclMax, what)[0][0];
    best = rep == 0 ? slowest : std::min(best, slowest);
    worst = std::max(worst, slowest);
  }
  return {best, best > 0 ? worst / best - 1 : 0};
}

// Bus bandwidth and the spread of its blocks.
struct Reading {
  double gbps = NAN;
  double spread = NAN;
};

Reading allreduce_busbw(Watchdog& wd, const CommStream& cs, const std::string& what, void* buf,
                        uint64_t bytes, int warmup, int iters) {
  const std::span<const CommStream> one(&cs, 1);
  int n = 1;
  RINGSIDE_NCCL_CHECK(ncclCommCount(cs.comm, &n));
  const size_t count = bytes / sizeof(float);
  const Timing t = time_on(wd, cs, what, warmup, iters, kRepeats, [&] {
    RINGSIDE_NCCL_WATCH(wd, one, what,
                        ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, cs.comm, cs.stream));
  });
  return {static_cast<double>(count * sizeof(float)) / 1e9 / t.sec * (2.0 * (n - 1) / n), t.spread};
}

// `repeats` timing blocks, the best counts.
Reading sendrecv_busbw(Watchdog& wd, const CommStream& cs, const std::string& what, void* send,
                       void* recv, uint64_t bytes, int peer, int warmup, int iters,
                       int repeats = kRepeats) {
  const std::span<const CommStream> one(&cs, 1);
  const Timing t = time_on(wd, cs, what, warmup, iters, repeats, [&] {
    RINGSIDE_NCCL_CHECK(ncclGroupStart());
    RINGSIDE_NCCL_CHECK(ncclSend(send, bytes, ncclUint8, peer, cs.comm, cs.stream));
    RINGSIDE_NCCL_CHECK(ncclRecv(recv, bytes, ncclUint8, peer, cs.comm, cs.stream));
    RINGSIDE_NCCL_WATCH(wd, one, what, ncclGroupEnd());
  });
  return {static_cast<double>(bytes) / 1e9 / t.sec, t.spread};
}

// One GPU's device-to-device copy of `bytes`: warm-up, then kRepeats blocks of
// `iters` copies, the best block.  GB/s is bytes over time (as nvbandwidth).
double copy_gbps(Watchdog& wd, const CommStream& cs, const std::string& what, void* dst,
                 const void* src, uint64_t bytes, int warmup, int iters, int repeats = kRepeats) {
  const std::span<const CommStream> one(&cs, 1);
  RINGSIDE_CUDA_CHECK(cudaSetDevice(cs.device));
  auto issue = [&] {
    RINGSIDE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cs.stream));
  };
  for (int i = 0; i < warmup; ++i) issue();
  wd.wait(one, what, "warm-up");
  double best = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    const double t0 = now_seconds();
    for (int i = 0; i < iters; ++i) issue();
    wd.wait(one, what, {}, true);
    const double sec = (now_seconds() - t0) / iters;
    best = rep == 0 ? sec : std::min(best, sec);
  }
  return static_cast<double>(bytes) / 1e9 / best;
}

// Every rank's `values` (equal lengths), rank after rank, on every rank.
std::vector<double> gather_doubles(Watchdog& wd, World& world, const std::vector<double>& values,
                                   std::string_view what) {
  std::vector<std::byte> block(values.size() * sizeof(double));
  std::memcpy(block.data(), values.data(), block.size());
  const std::vector<std::byte> all = oob_allgather(wd, world.comm_streams(), {block}, what);
  std::vector<double> out(all.size() / sizeof(double));
  std::memcpy(out.data(), all.data(), out.size() * sizeof(double));
  return out;
}

// Folds reading `x` into `cell`, keeping the lower (or higher) one; NaN is no reading.
void keep_lower(double& cell, double x) {
  if (!std::isnan(x)) cell = std::isnan(cell) ? x : std::min(cell, x);
}
void keep_higher(double& cell, double x) {
  if (!std::isnan(x)) cell = std::isnan(cell) ? x : std::max(cell, x);
}

// Splits the world communicator (every rank calls it); the new communicator,
// if this rank has a colour, is registered with the watchdog as `name` with
// `members` (world ranks in its rank order).  The split blocks until every
// rank joins and cannot be polled: it runs under a Deadline.
ncclComm_t split(Watchdog& wd, const CommStream& world, int my_rank, int color,
                 const std::string& name, std::vector<int> members) {
  const std::span<const CommStream> one(&world, 1);
  // `name` starts with "the "; a rank without a colour joins no communicator.
  const std::string what = name.empty() ? std::string("ncclCommSplit of the world communicator")
                                        : "ncclCommSplit into " + name.substr(4);
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", wd.timeout_seconds());
  ncclComm_t c = nullptr;
  {
    Deadline deadline(wd.timeout_seconds(),
                      "nccl_bench validate: FAIL: " + wd.describe_rank(my_rank) + ": " + what +
                          " did not return within " + limit +
                          " s (-T): a rank stopped responding before joining it; exiting with "
                          "code 1",
                      1);
    RINGSIDE_NCCL_WATCH(wd, one, what, ncclCommSplit(world.comm, color, my_rank, &c, nullptr));
  }
  if (c != nullptr) wd.add(c, name, std::move(members));
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
      std::fprintf(stderr,
                   "nccl_bench: error: cannot run scontrol: %s; is Slurm's scontrol in PATH?\n",
                   std::strerror(rc));
      ++failures;
      continue;
    }
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "nccl_bench: error: '%s' failed (status %d)\n",
                   render_command(cmd).c_str(), status);
      ++failures;
    }
  }
  return failures;
}

}  // namespace

namespace {

// The whole validation on an initialised world; returns the exit code.
int validate_world(World& world, const ValidateOptions& o, const std::optional<Baseline>& baseline,
                   double t_start) {
  Watchdog& wd = world.watchdog();
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

  // Measurement slots: [intra ns][global ns][intra spread ns].
  const size_t global_base = ns;
  const size_t spread_base = 2 * ns;
  std::vector<double> mine(spread_base + ns, NAN);
  const uint64_t copy_size = copy_bytes(d.sizes);
  const uint64_t max_size = copy_size;  // >= every size
  void* send = nullptr;
  void* recv = nullptr;
  RINGSIDE_CUDA_CHECK(cudaSetDevice(wcs.device));
  RINGSIDE_CUDA_CHECK(cudaMalloc(&send, max_size));
  RINGSIDE_CUDA_CHECK(cudaMalloc(&recv, max_size));
  RINGSIDE_CUDA_CHECK(cudaMemset(send, 1, max_size));
  RINGSIDE_CUDA_CHECK(cudaMemset(recv, 0, max_size));
  const std::string copy_what = "device-to-device copy of " + std::to_string(copy_size) +
                                " bytes on GPU " + std::to_string(wcs.device);
  // One GPU of each node at a time (GPUs of a node share the host's memory and
  // PCIe paths: measured alone, a slow one is not hidden by, nor blamed for, its
  // neighbours' load), in passes: a pass times one block of copies on every GPU,
  // so a GPU is judged against the other GPUs of the same pass
  // (validate/pair_passes.h).  This rank's readings, [pass]; `warmup` first runs
  // the warm-up copies.
  auto copy_passes = [&](int passes, bool warmup) {
    std::vector<double> out(static_cast<size_t>(passes), NAN);
    for (int pass = 0; pass < passes; ++pass) {
      for (int slot = 0; slot < gmax; ++slot) {
        if (slot == my_slot)
          out[static_cast<size_t>(pass)] =
              copy_gbps(wd, wcs, copy_what, recv, send, copy_size,
                        warmup && pass == 0 ? o.warmup : 0, o.iters, 1);
        oob_barrier(wd, std::span<const CommStream>(&wcs, 1), "per-GPU device copy");
      }
    }
    return out;
  };
  d.copy.resize(nn);
  d.copy_passes.resize(nn);
  for (size_t n = 0; n < nn; ++n) {
    d.copy[n].assign(static_cast<size_t>(d.gpus[n]), NAN);
    d.copy_passes[n].assign(static_cast<size_t>(d.gpus[n]), {});
  }
  auto add_copy_passes = [&](int passes, bool warmup, const char* what) {
    const std::vector<double> all = gather_doubles(wd, world, copy_passes(passes, warmup), what);
    for (int r = 0; r < nranks; ++r) {
      const size_t n = static_cast<size_t>(rank_node[static_cast<size_t>(r)]);
      const size_t g = static_cast<size_t>(rank_slot[static_cast<size_t>(r)]);
      for (int pass = 0; pass < passes; ++pass) {
        const double v =
            all[static_cast<size_t>(r) * static_cast<size_t>(passes) + static_cast<size_t>(pass)];
        d.copy_passes[n][g].push_back(v);
        keep_higher(d.copy[n][g], v);
      }
    }
  };

  // 1. Intra-node all_reduce, every node at once; `out[s]` gets this rank's
  //    reading per size and `spread[s]` its blocks' spread (NaN on a node of one GPU).
  auto intra_round = [&](double* out, double* spread) {
    std::vector<int> members;
    for (int r = 0; r < nranks; ++r) {
      if (rank_node[static_cast<size_t>(r)] == my_node) members.push_back(r);
    }
    ncclComm_t node =
        split(wd, wcs, me.rank, my_node,
              "the intra-node communicator of " + d.nodes[static_cast<size_t>(my_node)], members);
    const CommStream ncs{node, wcs.stream, wcs.device};
    if (d.gpus[static_cast<size_t>(my_node)] > 1) {
      for (size_t s = 0; s < ns; ++s) {
        const Reading rd = allreduce_busbw(
            wd, ncs, "intra-node all_reduce of " + std::to_string(d.sizes[s]) + " bytes", send,
            d.sizes[s], o.warmup, o.iters);
        out[s] = rd.gbps;
        spread[s] = rd.spread;
      }
    }
    wd.release(node);
  };
  intra_round(mine.data(), mine.data() + spread_base);
  // 1b. Each GPU's device-to-device copy.
  add_copy_passes(kPairPasses, true, "gathering the device copies");
  // 2. Global all_reduce (full).
  if (full && nn > 1) {
    for (size_t s = 0; s < ns; ++s) {
      mine[global_base + s] =
          allreduce_busbw(wd, wcs, "global all_reduce of " + std::to_string(d.sizes[s]) + " bytes",
                          send, d.sizes[s], o.warmup, o.iters)
              .gbps;
    }
  }
  // 3. Node pairs, round by round; within a pair, one 2-rank communicator per rail
  //    (local GPU index), all rails and pairs of a round concurrently.  The
  //    communicators are made once; a pass visits every round and times one block of
  //    sendrecv per rail and size, so a pair is judged against the pairs of the same
  //    pass (validate/pair_passes.h).
  std::vector<ncclComm_t> rail_comms(rounds.size(), nullptr);
  for (size_t r = 0; r < rounds.size(); ++r) {
    auto rail_color = [&](int rank) {
      const int node = rank_node[static_cast<size_t>(rank)];
      const int slot = rank_slot[static_cast<size_t>(rank)];
      for (size_t p = 0; p < rounds[r].pairs.size(); ++p) {
        const NodePair& np = rounds[r].pairs[p];
        if (np.first != node && np.second != node) continue;
        const int rails =
            std::min(d.gpus[static_cast<size_t>(np.first)], d.gpus[static_cast<size_t>(np.second)]);
        if (slot < rails) return static_cast<int>(p) * gmax + slot;
      }
      return NCCL_SPLIT_NOCOLOR;
    };
    const int color = rail_color(me.rank);
    std::vector<int> members;
    std::string name;
    if (color != NCCL_SPLIT_NOCOLOR) {
      for (int rank = 0; rank < nranks; ++rank) {
        if (rail_color(rank) == color) members.push_back(rank);
      }
      const NodePair& np = rounds[r].pairs[static_cast<size_t>(color / gmax)];
      name = "the rail-" + std::to_string(my_slot) + " communicator " +
             d.nodes[static_cast<size_t>(np.first)] + "<->" +
             d.nodes[static_cast<size_t>(np.second)];
    }
    rail_comms[r] = split(wd, wcs, me.rank, color, name, members);
  }
  auto rail_what = [&](size_t r, size_t s) {
    return "inter-node sendrecv of " + std::to_string(d.sizes[s]) + " bytes (round " +
           std::to_string(r + 1) + ")";
  };
  // This rank's readings of `passes` passes, [pass][round][size] (NaN where it sits
  // out a round); `warmup` first runs the warm-up iterations on every communicator.
  auto rail_passes = [&](int passes, bool warmup) {
    std::vector<double> out(static_cast<size_t>(passes) * rounds.size() * ns, NAN);
    for (int pass = -(warmup ? 1 : 0); pass < passes; ++pass) {
      for (size_t r = 0; r < rounds.size(); ++r) {
        if (rail_comms[r] == nullptr) continue;
        const CommStream rcs{rail_comms[r], wcs.stream, wcs.device};
        int my_comm_rank = 0;
        RINGSIDE_NCCL_CHECK(ncclCommUserRank(rail_comms[r], &my_comm_rank));
        for (size_t s = 0; s < ns; ++s) {
          if (pass < 0) {
            sendrecv_busbw(wd, rcs, rail_what(r, s), send, recv, d.sizes[s], 1 - my_comm_rank,
                           o.warmup, 1, 1);
            continue;
          }
          out[(static_cast<size_t>(pass) * rounds.size() + r) * ns + s] =
              sendrecv_busbw(wd, rcs, rail_what(r, s), send, recv, d.sizes[s], 1 - my_comm_rank, 0,
                             o.iters, 1)
                  .gbps;
        }
      }
    }
    return out;
  };
  // Every rank's readings of `passes` passes into d.pairs.  A rail's reading is its
  // slower end's; a pair's, its best rail's.
  d.pairs.clear();
  for (const Round& round : rounds) {
    for (const NodePair& np : round.pairs) {
      PairResult pr;
      pr.nodes = np;
      const int rails =
          std::min(d.gpus[static_cast<size_t>(np.first)], d.gpus[static_cast<size_t>(np.second)]);
      pr.busbw.assign(ns, NAN);
      pr.rails.assign(ns, std::vector<double>(static_cast<size_t>(rails), NAN));
      d.pairs.push_back(std::move(pr));
    }
  }
  auto add_rail_passes = [&](int passes, bool warmup, const char* what) {
    const std::vector<double> all = gather_doubles(wd, world, rail_passes(passes, warmup), what);
    const size_t per_rank = static_cast<size_t>(passes) * rounds.size() * ns;
    for (int pass = 0; pass < passes; ++pass) {
      size_t p = 0;
      for (size_t r = 0; r < rounds.size(); ++r) {
        for (const NodePair& np : rounds[r].pairs) {
          PairResult& pr = d.pairs[p++];
          const size_t rails = pr.rails.empty() ? 0 : pr.rails[0].size();
          std::vector<std::vector<double>> now(ns, std::vector<double>(rails, NAN));
          for (int rank = 0; rank < nranks; ++rank) {
            const int n = rank_node[static_cast<size_t>(rank)];
            const size_t slot = static_cast<size_t>(rank_slot[static_cast<size_t>(rank)]);
            if ((n != np.first && n != np.second) || slot >= rails) continue;
            for (size_t s = 0; s < ns; ++s) {
              keep_lower(now[s][slot],
                         all[static_cast<size_t>(rank) * per_rank +
                             (static_cast<size_t>(pass) * rounds.size() + r) * ns + s]);
            }
          }
          std::vector<double> best_rail(ns, NAN);
          for (size_t s = 0; s < ns; ++s) {
            for (size_t k = 0; k < rails; ++k) {
              keep_higher(best_rail[s], now[s][k]);
              keep_higher(pr.rails[s][k], now[s][k]);
            }
            keep_higher(pr.busbw[s], best_rail[s]);
          }
          pr.passes.push_back(std::move(best_rail));
        }
      }
    }
  };
  add_rail_passes(kPairPasses, true, "gathering the node pair readings");
  // 3b. GPU pairs inside each node: one 2-rank communicator per pair of GPU slots,
  //     made once, round-robin (each GPU in one pair per round), all nodes at once.
  //     A pass visits every round once and times one block of sendrecv per pair; a
  //     pair is judged against the pairs of the same pass (validate/pair_passes.h).
  const std::vector<Round> gpu_rounds = all_pairs_rounds(gmax);
  d.gpu_pair_size = *std::max_element(d.sizes.begin(), d.sizes.end());
  std::vector<ncclComm_t> gpu_pair_comms(gpu_rounds.size(), nullptr);
  const int my_gpus = d.gpus[static_cast<size_t>(my_node)];
  for (size_t r = 0; r < gpu_rounds.size(); ++r) {
    int partner = -1;
    for (const NodePair& gp : gpu_rounds[r].pairs) {
      if (gp.first == my_slot) partner = gp.second;
      if (gp.second == my_slot) partner = gp.first;
    }
    const bool in = partner >= 0 && partner < my_gpus;
    const int color = in ? my_node * gmax + std::min(my_slot, partner) : NCCL_SPLIT_NOCOLOR;
    std::vector<int> members;
    std::string name;
    if (in) {
      for (int rank = 0; rank < nranks; ++rank) {
        const int slot = rank_slot[static_cast<size_t>(rank)];
        if (rank_node[static_cast<size_t>(rank)] == my_node && (slot == my_slot || slot == partner))
          members.push_back(rank);
      }
      name = "the GPU-pair communicator " + d.nodes[static_cast<size_t>(my_node)] + " GPU " +
             std::to_string(std::min(my_slot, partner)) + "<->GPU " +
             std::to_string(std::max(my_slot, partner));
    }
    gpu_pair_comms[r] = split(wd, wcs, me.rank, color, name, members);
  }
  auto gpu_pair_what = [&](size_t r) {
    return "intra-node sendrecv of " + std::to_string(d.gpu_pair_size) + " bytes (GPU pair round " +
           std::to_string(r + 1) + ")";
  };
  // Warm-up once per communicator, then `passes` passes; this rank's readings,
  // [pass][round] (NaN where it sits out a round).
  for (size_t r = 0; r < gpu_rounds.size(); ++r) {
    if (gpu_pair_comms[r] == nullptr) continue;
    const CommStream pcs{gpu_pair_comms[r], wcs.stream, wcs.device};
    int my_comm_rank = 0;
    RINGSIDE_NCCL_CHECK(ncclCommUserRank(gpu_pair_comms[r], &my_comm_rank));
    sendrecv_busbw(wd, pcs, gpu_pair_what(r), send, recv, d.gpu_pair_size, 1 - my_comm_rank,
                   o.warmup, 1, 1);
  }
  auto gpu_pair_passes = [&](int passes) {
    std::vector<double> out(static_cast<size_t>(passes) * gpu_rounds.size(), NAN);
    for (int pass = 0; pass < passes; ++pass) {
      for (size_t r = 0; r < gpu_rounds.size(); ++r) {
        if (gpu_pair_comms[r] == nullptr) continue;
        const CommStream pcs{gpu_pair_comms[r], wcs.stream, wcs.device};
        int my_comm_rank = 0;
        RINGSIDE_NCCL_CHECK(ncclCommUserRank(gpu_pair_comms[r], &my_comm_rank));
        out[static_cast<size_t>(pass) * gpu_rounds.size() + r] =
            sendrecv_busbw(wd, pcs, gpu_pair_what(r), send, recv, d.gpu_pair_size, 1 - my_comm_rank,
                           0, o.iters, 1)
                .gbps;
      }
    }
    return out;
  };
  // Every rank's readings of `passes` passes into d.gpu_pairs, pass after pass.  A
  // pair's reading is its slower end's.
  std::vector<std::vector<int>> rank_at(nn);  // [node][slot] -> rank
  for (int rank = 0; rank < nranks; ++rank)
    rank_at[static_cast<size_t>(rank_node[static_cast<size_t>(rank)])].push_back(rank);
  d.gpu_pairs.assign(nn, {});
  for (size_t n = 0; n < nn; ++n) {
    for (size_t r = 0; r < gpu_rounds.size(); ++r) {
      for (const NodePair& gp : gpu_rounds[r].pairs) {
        if (gp.second < d.gpus[n]) d.gpu_pairs[n].pairs.push_back(gp);
      }
    }
  }
  auto add_gpu_pair_passes = [&](int passes, const char* what) {
    const std::vector<double> all = gather_doubles(wd, world, gpu_pair_passes(passes), what);
    const size_t per_rank = static_cast<size_t>(passes) * gpu_rounds.size();
    for (size_t n = 0; n < nn; ++n) {
      for (int pass = 0; pass < passes; ++pass) {
        std::vector<double> row;
        for (size_t r = 0; r < gpu_rounds.size(); ++r) {
          for (const NodePair& gp : gpu_rounds[r].pairs) {
            if (gp.second >= d.gpus[n]) continue;
            double v = NAN;
            for (int slot : {gp.first, gp.second}) {
              const int rank = rank_at[n][static_cast<size_t>(slot)];
              keep_lower(v, all[static_cast<size_t>(rank) * per_rank +
                                static_cast<size_t>(pass) * gpu_rounds.size() + r]);
            }
            row.push_back(v);
          }
        }
        d.gpu_pairs[n].passes.push_back(std::move(row));
      }
    }
  };
  add_gpu_pair_passes(kPairPasses, "gathering the GPU pair readings");
  // 4. NVML health after the load, so links and clocks are in their working state.
  const GpuHealth health =
      health_session.finish("GPU " + std::to_string(wcs.device) + " (" + my_info.bus_id + ")");

  // 5. Everyone gets everything and evaluates the same way.
  const std::vector<double> all_meas =
      gather_doubles(wd, world, mine, "gathering the measurements");
  const std::vector<std::byte> all_health = oob_allgather(
      wd, world.comm_streams(), {encode_health(health)}, "gathering the health checks");
  auto meas = [&](int rank, size_t slot) {
    return all_meas[static_cast<size_t>(rank) * mine.size() + slot];
  };

  d.intra.assign(nn, std::vector<double>(ns, NAN));
  d.intra_spread.assign(nn, std::vector<double>(ns, NAN));
  d.health_fail.assign(nn, {});
  d.health_warn.assign(nn, {});
  for (int r = 0; r < nranks; ++r) {
    const size_t n = static_cast<size_t>(rank_node[static_cast<size_t>(r)]);
    // A node's reading is its slowest member's, its spread the widest.
    for (size_t s = 0; s < ns; ++s) {
      keep_lower(d.intra[n][s], meas(r, s));
      keep_higher(d.intra_spread[n][s], meas(r, spread_base + s));
    }
    const GpuHealth h = decode_health(all_health.data() + static_cast<size_t>(r) * kHealthBlock);
    for (const std::string& f : h.fail) d.health_fail[n].push_back(f);
    for (const std::string& w : h.warn) d.health_warn[n].push_back(w);
  }
  if (full && nn > 1) {
    d.global.assign(ns, NAN);
    for (size_t s = 0; s < ns; ++s) d.global[s] = meas(0, global_base + s);
  }
  // 6. When a node's all_reduce looks slow, every node measures again (the
  //    comparison is relative) and each node's faster reading counts.
  if (!slow_intra(d, baseline ? &*baseline : nullptr, o.threshold_pct).empty()) {
    std::vector<double> again(ns, NAN), again_spread(ns, NAN);
    intra_round(again.data(), again_spread.data());
    const std::vector<double> all_again =
        gather_doubles(wd, world, again, "gathering the intra-node all_reduce measured again");
    std::vector<std::vector<double>> fresh(nn, std::vector<double>(ns, NAN));
    for (int r = 0; r < nranks; ++r) {
      const size_t n = static_cast<size_t>(rank_node[static_cast<size_t>(r)]);
      // A node's reading is its slowest member's, as in the first pass.
      for (size_t s = 0; s < ns; ++s)
        keep_lower(fresh[n][s], all_again[static_cast<size_t>(r) * ns + s]);
    }
    for (size_t n = 0; n < nn; ++n) {
      for (size_t s = 0; s < ns; ++s) keep_higher(d.intra[n][s], fresh[n][s]);
    }
  }
  // 7. When a node pair looks slow, every pair measures as many passes again, and
  //    the verdict counts them all.  Every rank reaches the same decision.
  if (node_pairs_suspect(d, baseline ? &*baseline : nullptr, o.threshold_pct))
    add_rail_passes(kPairPasses, false, "gathering the node pair readings measured again");
  for (ncclComm_t c : rail_comms) {
    if (c != nullptr) wd.release(c);
  }
  // 7b. When a GPU pair looks slow, every node measures as many passes again, and
  //     the verdict counts them all.
  if (gpu_pairs_suspect(d, baseline ? &*baseline : nullptr, o.threshold_pct))
    add_gpu_pair_passes(kPairPasses, "gathering the GPU pair readings measured again");
  for (ncclComm_t c : gpu_pair_comms) {
    if (c != nullptr) wd.release(c);
  }
  // 8. When a GPU's copy looks slow, every GPU copies as many passes again, and
  //    the verdict counts them all.
  if (copies_suspect(d, baseline ? &*baseline : nullptr, o.threshold_pct))
    add_copy_passes(kPairPasses, false, "gathering the device copies measured again");
  RINGSIDE_CUDA_CHECK(cudaFree(send));
  RINGSIDE_CUDA_CHECK(cudaFree(recv));

  const Verdict verdict = evaluate(d, baseline ? &*baseline : nullptr, o.threshold_pct);
  ValidateRunInfo info;
  info.level = o.level;
  info.threshold_pct = o.threshold_pct;
  info.baseline = o.baseline;
  info.floors = baseline ? baseline->source() : "";
  info.nranks = nranks;
  info.seconds = now_seconds() - t_start;
  info.rounds = static_cast<int>(rounds.size());
  info.gpu_pair_size = d.gpu_pair_size;
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

// A communicator failed: no verdict per node is possible, the run fails.  Every
// rank that saw the failure says so; rank 0 also ends the table output and the
// JSON with it.  Drain commands are not printed: the rank a message names may
// itself only have aborted because of another.
int report_abort(World& world, const ValidateOptions& o, const CommFailure& f, double t_start) {
  std::fprintf(stderr, "nccl_bench validate: FAIL: %s\n", f.what());
  if (!world.is_root_process()) return 1;
  ValidateAbort a;
  a.rank = world.locals()[0].rank;
  a.message = f.what();
  a.kind = f.kind() == FailureKind::kTimeout ? "timeout" : "nccl_error";
  a.peer_ranks = f.peers();
  for (int p : f.peers()) {
    if (p >= 0 && static_cast<size_t>(p) < world.rank_infos().size())
      a.peer_nodes.push_back(world.rank_infos()[static_cast<size_t>(p)].node);
  }
  std::printf("# verdict: FAIL (aborted: %s)\n", f.what());
  std::fflush(stdout);
  if (!o.json_file.empty()) {
    ValidateRunInfo info;
    info.level = o.level;
    info.threshold_pct = o.threshold_pct;
    info.baseline = o.baseline;
    info.nranks = world.nranks();
    info.seconds = now_seconds() - t_start;
    info.gpu_pair_size = *std::max_element(o.sizes.begin(), o.sizes.end());
    std::ofstream out(o.json_file, std::ios::trunc);
    out << render_abort_json(info, o.sizes, a);
    if (!out) throw RuntimeError("cannot write --json file '" + o.json_file + "'");
  }
  return 1;
}

}  // namespace

int run_validate(int argc, char** argv) {
  auto opt = parse_validate_options(argc, argv);
  if (!opt) return 0;
  const ValidateOptions& o = *opt;
  // The floors: the built-in table, overridden entry by entry by --baseline.
  std::optional<Baseline> baseline;
  if (!o.no_default_floors) baseline = default_floors();
  if (!o.baseline.empty()) {
    const Baseline file = Baseline::load(o.baseline);
    if (baseline)
      baseline->override_with(file);
    else
      baseline = file;
  }

  World world(o.world, &argc, &argv);
  const double t_start = now_seconds();
  try {
    return validate_world(world, o, baseline, t_start);
  } catch (const CommFailure& f) {
    return report_abort(world, o, f, t_start);
  } catch (const RuntimeError& e) {
    // Communicators with work in flight are aborted, not destroyed (which waits for it).
    world.watchdog().stop(e.what());
    throw;
  }
}

}  // namespace ringside::bench
