// GPU health from the counters and events: XIDs, uncorrectable ECC growth,
// remapped rows, PCIe replays, throttling episodes.  One finding per problem
// kind, listing every rank that shows it.  Also: ranks with no trace file.
#include <algorithm>
#include <cstdio>
#include <map>

#include "detect/context.h"
#include "report/format.h"
#include "load/gpu_summary.h"
#include "report/next_command.h"
#include "ringside/safe_text.h"
#include "ringside/trace_writer.h"

namespace ringside::analysis {
namespace {}  // namespace

void detect_gpu_health(const Context& ctx, std::vector<Finding>& out) {
  struct Problem {
    std::vector<int64_t> ranks;
    std::vector<std::string> details;
    double severity = 0.5;
  };
  std::map<std::string, Problem> problems;
  for (const auto& ri : ctx.set.ranks) {
    if (!ri.has_file) continue;
    const std::string who = ctx.describe_rank(ri.rank);
    for (const auto& e : ri.events) {
      if (static_cast<trace::EventKind>(e.kind) != trace::EventKind::kXid) continue;
      Problem& p = problems["xid"];
      if (std::find(p.ranks.begin(), p.ranks.end(), ri.rank) == p.ranks.end()) {
        p.ranks.push_back(ri.rank);
        p.details.push_back("XID " + std::to_string(e.value) + " on " + who);
      }
      p.severity = 0.9;
    }
    const GpuSummary& g = ri.gpu;
    if (g.ecc_uncorrected_last > g.ecc_uncorrected_first || g.ecc_uncorrected_last > 0) {
      Problem& p = problems["ecc"];
      p.ranks.push_back(ri.rank);
      p.details.push_back(
          std::to_string(g.ecc_uncorrected_last) + " uncorrectable ECC errors on " + who +
          (g.ecc_uncorrected_last > g.ecc_uncorrected_first ? " (grew during the job)" : ""));
      p.severity = 0.9;
    }
    if (g.remapped_last > g.remapped_first) {
      Problem& p = problems["remapped_rows"];
      p.ranks.push_back(ri.rank);
      p.details.push_back("remapped rows " + std::to_string(g.remapped_first) + " -> " +
                          std::to_string(g.remapped_last) + " on " + who);
      p.severity = 0.7;
    }
    if (g.pcie_replays_last > g.pcie_replays_first + 100) {
      Problem& p = problems["pcie_replays"];
      p.ranks.push_back(ri.rank);
      p.details.push_back(std::to_string(g.pcie_replays_last - g.pcie_replays_first) +
                          " PCIe replays on " + who);
      p.severity = 0.5;
    }
    if (g.slowdown_fraction() >= ctx.th.throttle_fraction) {
      Problem& p = problems["throttling"];
      p.ranks.push_back(ri.rank);
      p.details.push_back(
          slowdown_reason_names(g.slowdown_reasons) + " in " +
          fmt("%.0f", 100 * g.slowdown_fraction()) + "% of samples on " + who +
          (g.max_temperature_c ? " (up to " + std::to_string(g.max_temperature_c) + " C)" : ""));
      p.severity = 0.6;
    }
  }
  for (auto& [kind, p] : problems) {
    Finding f;
    f.kind = "gpu_health";
    f.subkind = kind;
    f.ranks = p.ranks;
    f.nodes = ctx.nodes_of(p.ranks);
    std::string d;
    for (size_t i = 0; i < p.details.size() && i < 4; ++i) d += (i ? "; " : "") + p.details[i];
    if (p.details.size() > 4) d += "; and " + std::to_string(p.details.size() - 4) + " more";
    f.evidence = d + ".";
    f.severity = p.severity;
    f.confidence = 0.95;
    f.next_command = next_command_for_gpu(ctx, f);
    out.push_back(std::move(f));
  }
}

void detect_missing_traces(const Context& ctx, std::vector<Finding>& out) {
  auto list_of = [](const std::vector<int64_t>& ranks) {
    std::string list;
    for (size_t i = 0; i < ranks.size() && i < 8; ++i)
      list += (i ? ", " : "") + std::to_string(ranks[i]);
    if (ranks.size() > 8) list += ", ...";
    return list;
  };
  // Files that exist but could not be used: named with the first reason.
  std::vector<int64_t> bad;
  for (const auto& b : ctx.set.bad_ranks) bad.push_back(b.rank);
  std::sort(bad.begin(), bad.end());
  bad.erase(std::unique(bad.begin(), bad.end()), bad.end());
  if (!bad.empty()) {
    Finding f;
    f.kind = "missing_trace";
    f.subkind = "bad_trace";
    f.ranks = bad;
    f.nodes = ctx.nodes_of(bad);
    f.evidence = std::to_string(bad.size()) + " rank" + (bad.size() == 1 ? "'s" : "s'") +
                 " trace could not be used (rank " + list_of(bad) +
                 "): " + ctx.set.bad_ranks.front().reason +
                 ". The analysis covers the other ranks only; nothing is concluded from these.";
    f.severity = 0.5;
    f.confidence = 1.0;
    nlohmann::json reasons = nlohmann::json::array();
    for (const auto& b : ctx.set.bad_ranks)
      reasons.push_back({{"rank", b.rank}, {"reason", b.reason}});
    f.extra["reasons"] = reasons;
    f.next_command = "h5dump -H " +
                     shell_quote(ctx.set.ranks[static_cast<size_t>(bad.front())].path) +
                     "  # the file as HDF5 sees it";
    out.push_back(std::move(f));
  }
  // Traces without a single NCCL operation: nothing was observed, so nothing can be
  // called healthy.
  std::vector<int64_t> traced;
  bool any_op = false;
  for (const auto& ri : ctx.set.ranks) {
    if (!ri.has_file) continue;
    traced.push_back(ri.rank);
    any_op = any_op || ri.op_count > 0 || !ri.pending.empty();
  }
  if (!traced.empty() && !any_op && !ctx.th.live) {
    Finding f;
    f.kind = "missing_trace";
    f.subkind = "no_ops";
    f.ranks = traced;
    f.nodes = ctx.nodes_of(traced);
    f.evidence = "none of the " + std::to_string(traced.size()) +
                 " traces holds a single NCCL operation: the probe was not loaded into the "
                 "processes that use NCCL (a wrapper script was traced instead, or NCCL is "
                 "linked statically), or the job ended before its first collective. Nothing "
                 "about its communication can be judged.";
    f.severity = 0.5;
    f.confidence = 1.0;
    f.next_command =
        "ringside run --help  # wrap the training processes themselves, e.g. "
        "srun ... ringside run -- python train.py";
    out.push_back(std::move(f));
  }
  std::vector<int64_t> missing;
  for (const auto& ri : ctx.set.ranks) {
    if (!ri.has_file && !std::binary_search(bad.begin(), bad.end(), ri.rank))
      missing.push_back(ri.rank);
  }
  if (missing.empty()) return;
  Finding f;
  f.kind = "missing_trace";
  f.ranks = missing;
  f.evidence = std::to_string(missing.size()) + " of " + std::to_string(ctx.set.world_size) +
               " ranks have no readable trace (rank " + list_of(missing) +
               "): the process never started tracing, its "
               "file was lost, or it is unreadable; the analysis covers the others only.";
  f.severity = 0.5;
  f.confidence = 1.0;
  // The probe's file name for rank 0, its digits made a placeholder.
  const std::string first = trace::trace_file_name(ctx.set.job_id, 0, ctx.set.step_id);
  const std::string pattern = first.substr(0, first.size() - std::string("000000.h5").size());
  f.next_command =
      "ls -l " + shell_quote(ctx.set.dir) + "  # expect " + pattern + "<rank>.h5 for every rank";
  out.push_back(std::move(f));
}

}  // namespace ringside::analysis
