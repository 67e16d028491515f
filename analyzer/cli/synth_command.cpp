#include <unistd.h>

#include <iostream>

#include "cli/commands.h"
#include "ringside/config_spec.h"
#include "synth/synth_writer.h"

namespace ringside::analysis::cli {

void add_synth_command(CLI::App& app, int& exit_code) {
  struct Args {
    synth::SynthSpec spec;
    std::vector<std::string> faults;
    std::string buckets;
    std::string tp_bytes, pp_bytes;
    std::string comm_init = "split";
  };
  auto a = std::make_shared<Args>();
  synth::SynthSpec& s = a->spec;
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write realistic synthetic traces (any size, injected faults) for tests and docs");
  cmd->add_option("-o,--out", s.out_dir, "output directory (created; must hold no traces)")
      ->required();
  cmd->add_option("-n,--ranks", s.ranks, "ranks")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("-N,--nodes", s.nodes, "nodes (must divide ranks)")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  cmd->add_option("--steps", s.steps, "training steps")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--tp", s.tp, "tensor-parallel group size")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--pp", s.pp, "pipeline stages")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--comm-init", a->comm_init,
                  "how the tp/pp/dp communicators are made: split (ncclCommSplit of the world) "
                  "or uniqueid (each from its own unique id, as PyTorch's new_group does)")
      ->check(CLI::IsMember({"split", "uniqueid"}))
      ->capture_default_str();
  cmd->add_flag("--comm-streams", s.comm_streams,
                "each communicator's ops on a stream of its own (as PyTorch process groups do)");
  cmd->add_flag("--overlap", s.overlap,
                "gradient buckets all-reduced on their own stream during the backward pass");
  cmd->add_option("--tp-ops", s.tp_ops, "tensor-parallel all-reduces per step")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--buckets", a->buckets,
                  "gradient bucket sizes per step, comma separated (e.g. 25M,25M,8M)");
  cmd->add_option("--tp-bytes", a->tp_bytes, "tensor-parallel all-reduce size (e.g. 8M)");
  cmd->add_option("--pp-bytes", a->pp_bytes, "pipeline activation size (e.g. 16M)");
  cmd->add_option("--compute-ms", s.compute_ms, "compute per step and rank, ms")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  cmd->add_option("--jitter", s.jitter, "relative noise of compute chunks")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  cmd->add_option("--hiccups", s.hiccups,
                  "chance that a compute chunk is held up once by its host (30-100% longer): "
                  "noise, not a fault")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  cmd->add_option("--host-wait", s.host_wait,
                  "share of the job each rank's threads waited for a CPU (recorded as the "
                  "probe records run-queue delay): an oversubscribed host")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--intra-gbps", s.intra_gbps, "intra-node bus bandwidth, GB/s")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--inter-gbps", s.inter_gbps, "inter-node bus bandwidth, GB/s")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--clock-offset-ms", s.clock_offset_ms, "node clocks differ by up to this much")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--sample-hz", s.sample_hz, "GPU counter samples per second (0: none)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--seed", s.seed, "random seed")->capture_default_str();
  cmd->add_option("--job-id", s.job_id, "job id")->capture_default_str();
  cmd->add_flag("--live", s.live,
                "files end as a running job's do (no end-of-tracing record), for `ringside watch`");
  cmd->add_option("--grow-steps", s.grow_steps,
                  "write the last N steps one at a time, flushing every file after each "
                  "(a running job's traces growing, for `ringside watch`)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--grow-every", s.grow_every_s, "seconds between two of those steps")
      ->capture_default_str();
  cmd->add_flag("--links", s.links,
                "also write /links rows, as the probe's NCCL profiler plugin does (each rank's "
                "transfers to ring neighbours and send/recv peers on other nodes)");
  cmd->add_option("--chunk-records", s.chunk_records, "HDF5 chunk size of the traces")
      ->check(CLI::Range(16, 1 << 20))
      ->capture_default_str();
  cmd->add_option(
      "--fault", a->faults,
      "inject a fault (repeatable): straggler:rank=R,factor=F | throttle:rank=R[,factor=F] | "
      "slow_node:node=N,factor=F | imbalance:amount=A | heavy_sample:factor=F[,rank=R,every=K] | "
      "heavy_stage:stage=S,factor=F | "
      "heavy_replica:replica=D,factor=F | slow_nic:node=N,factor=F | "
      "slow_pair:a=N1,b=N2,factor=F | slow_p2p:rank=R,peer=P,factor=F | stop:rank=R,op=N | "
      "all_stuck:op=N | stall:rank=R,op=N | "
      "desync:rank=R,op=N | crash:rank=R,op=N | missing:rank=R | xid:rank=R[,code=C,step=S] | "
      "ecc:rank=R[,step=S]   (op N = the N-th op of the world communicator, from 0)");
  cmd->callback([a, &exit_code] {
    synth::SynthSpec& spec = a->spec;
    spec.unique_ids = a->comm_init == "uniqueid";
    auto bytes = [](const std::string& flag, const std::string& text) {
      auto v = config::parse_bytes(text);
      if (!v.ok() || v.value() == 0)
        throw InputError(flag + " '" + text + "': expected a size such as 8M or 1G");
      return v.value();
    };
    if (!a->buckets.empty()) {
      spec.buckets.clear();
      size_t start = 0;
      while (start <= a->buckets.size()) {
        size_t comma = a->buckets.find(',', start);
        spec.buckets.push_back(bytes("--buckets", a->buckets.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    if (!a->tp_bytes.empty()) spec.tp_bytes = bytes("--tp-bytes", a->tp_bytes);
    if (!a->pp_bytes.empty()) spec.pp_bytes = bytes("--pp-bytes", a->pp_bytes);
    for (const auto& f : a->faults) {
      auto parsed = synth::parse_fault(f);
      if (!parsed.ok()) throw InputError(parsed.message());
      spec.faults.push_back(parsed.value());
    }
    auto result = synth::write_synth_traces(
        spec,
        [](int done, int total) {
          if (isatty(2))
            std::cerr << "\rsynth: " << done << "/" << total << " ranks written" << std::flush;
        },
        [](int step, int steps) {
          std::cout << "synth: " << step << " of " << steps << " steps written to every file"
                    << std::endl;
        });
    if (isatty(2)) std::cerr << "\r\033[K";
    if (!result.ok()) throw InputError(result.message());
    std::cout << "synth: wrote " << result->files << " trace files (" << result->ops << " ops, "
              << result->job_seconds << " s of job time" << (result->hung ? ", hung" : "")
              << ") to " << spec.out_dir << "\n";
    exit_code = 0;
  });
}

}  // namespace ringside::analysis::cli
