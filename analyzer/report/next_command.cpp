#include "report/next_command.h"

#include <algorithm>

#include "ringside/safe_text.h"

namespace ringside::analysis {
namespace {

// A healthy node to benchmark against: the first node not in `avoid`.
std::string other_node(const Context& ctx, const std::vector<std::string>& avoid) {
  for (const auto& n : ctx.set.nodes) {
    if (std::find(avoid.begin(), avoid.end(), n) == avoid.end()) return n;
  }
  return "";
}

// "--ntasks-per-node=K" with K the most ranks the job ran on any of `nodes` (its GPUs
// per node), so that the check exercises what the job used.
std::string tasks_per_node(const Context& ctx, const std::vector<std::string>& nodes) {
  size_t most = 0;
  for (const auto& n : nodes) {
    size_t here = 0;
    for (const auto& r : ctx.set.ranks) here += r.node == n ? 1 : 0;
    most = std::max(most, here);
  }
  return "--ntasks-per-node=" + std::to_string(std::max<size_t>(most, 1));
}

}  // namespace

std::string next_command_for_straggler(const Context& ctx, int64_t rank) {
  const RankInfo& ri = ctx.set.ranks[static_cast<size_t>(rank)];
  std::string bus = ri.gpu_pci_bus_id.empty() ? std::to_string(ri.gpu_device) : ri.gpu_pci_bus_id;
  return "srun -w " + shell_quote(ri.node) +
         " -N1 -n1 nvidia-smi -q -d PERFORMANCE,CLOCK,TEMPERATURE -i " + shell_quote(bus) +
         "   # then: srun -w " + shell_quote(ri.node) + " " + tasks_per_node(ctx, {ri.node}) +
         " nccl_bench validate";
}

std::string next_command_for_node_straggler(const Context& ctx, const std::string& node) {
  return "srun -w " + shell_quote(node) + " " + tasks_per_node(ctx, {node}) +
         " nccl_bench validate   # and check the node for other load (top, dmesg)";
}

std::string next_command_for_imbalance(const Context&, bool structural) {
  return structural ? "rebalance the partition (e.g. layers per pipeline stage) and re-run under "
                      "`ringside run`"
                    : "bucket or pack samples by length so every rank gets similar work per step";
}

std::string next_command_for_link(const Context& ctx, const std::vector<std::string>& nodes) {
  std::vector<std::string> pair = nodes;
  if (pair.size() < 2) {
    std::string peer = other_node(ctx, pair);
    if (!peer.empty()) pair.push_back(peer);
  }
  if (pair.size() < 2 || pair[0] == pair[1]) {
    return "srun -w " + shell_quote(pair[0]) + " -N1 " + tasks_per_node(ctx, {pair[0]}) +
           " nccl_bench all_reduce -b 1M -e 1G -f 2";
  }
  return "srun -w " + shell_quote(pair[0] + "," + pair[1]) +
         " --ntasks-per-node=1 nccl_bench sendrecv -b 1M -e 1G -f 2";
}

std::string next_command_for_gpu_pair(const std::string& node, int gpu_a, int gpu_b) {
  return "srun -w " + shell_quote(node) +
         " -N1 -n1 env CUDA_VISIBLE_DEVICES=" + std::to_string(gpu_a) + "," +
         std::to_string(gpu_b) + " nccl_bench sendrecv -g 2 -b 1M -e 1G -f 2";
}

std::string next_command_for_hang(const Context& ctx, const Finding& f) {
  if (f.subkind == "all_stuck") {
    std::string nodes;
    for (const auto& n : f.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    return "srun -w " + shell_quote(nodes) + " " + tasks_per_node(ctx, f.nodes) +
           " nccl_bench validate   # test the links the comm uses";
  }
  if (f.ranks.empty()) return "inspect the stacks of the ranks in the comm (py-spy dump / gdb)";
  const RankInfo& ri = ctx.set.ranks[static_cast<size_t>(f.ranks.front())];
  if (!ri.has_file)
    return "look for rank " + std::to_string(ri.rank) + "'s output and exit status in the job log";
  if (f.subkind == "dead_rank") {
    return "sacct -j " + shell_quote(ctx.set.job_id) +
           " --format=JobID,State,ExitCode,NodeList   # and dmesg on " + shell_quote(ri.node);
  }
  if (f.subkind == "gpu_stall") {
    return "srun --jobid " + shell_quote(ctx.set.job_id) + " --overlap -w " + shell_quote(ri.node) +
           " nvidia-smi -q -i " + shell_quote(ri.gpu_pci_bus_id) +
           "   # look for XIDs / a hung context";
  }
  return "srun --jobid " + shell_quote(ctx.set.job_id) + " --overlap -w " + shell_quote(ri.node) +
         " py-spy dump --pid " + std::to_string(ri.pid) + "   # where is rank " +
         std::to_string(ri.rank) + " stuck?";
}

std::string next_command_for_abnormal_end(const Context& ctx) {
  return "sacct -j " + shell_quote(ctx.set.job_id) +
         " --format=JobID,State,ExitCode,DerivedExitCode,NodeList   # who ended the job, and how";
}

std::string next_command_for_desync(const Context&, const Finding& f) {
  return "compare the code path of rank " +
         (f.ranks.empty() ? std::string("?") : std::to_string(f.ranks.front())) +
         " with the others before this collective (conditional collectives, uneven last batch, "
         "shape mismatch)";
}

std::string next_command_for_gpu(const Context& ctx, const Finding& f) {
  if (f.ranks.empty()) return "";
  const RankInfo& ri = ctx.set.ranks[static_cast<size_t>(f.ranks.front())];
  if (f.subkind == "throttling") {
    return "srun -w " + shell_quote(ri.node) +
           " -N1 -n1 nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i " +
           shell_quote(ri.gpu_pci_bus_id);
  }
  return "srun -w " + shell_quote(ri.node) +
         " -N1 -n1 nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i " +
         shell_quote(ri.gpu_pci_bus_id) +
         "   # if confirmed: scontrol update nodename=" + shell_quote(ri.node) +
         " state=drain reason=" + shell_quote("GPU " + f.subkind);
}

}  // namespace ringside::analysis
