#include "report/report_text.h"
#include "report/format.h"
#include "ringside/count_text.h"
#include "ringside/safe_text.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

namespace ringside::analysis {
namespace {

std::string join_ranks(const std::vector<int64_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size() && i < 12; ++i) s += (i ? "," : "") + std::to_string(r[i]);
  if (r.size() > 12) s += ",... (" + std::to_string(r.size()) + ")";
  return s;
}

// The ranks a root holds up, folded under it: one line per op they wait in.
void render_consequences(const Finding& f, std::ostream& out) {
  if (f.consequences.empty()) return;
  size_t ranks = 0;
  for (const auto& c : f.consequences) ranks += c.ranks.size();
  out << "   consequences: " << count_text(static_cast<int64_t>(ranks), "rank")
      << " held up by it\n";
  constexpr size_t kShown = 6;
  for (size_t i = 0; i < f.consequences.size() && i < kShown; ++i) {
    const Consequence& c = f.consequences[i];
    out << "     - rank" << (c.ranks.size() > 1 ? "s " : " ") << join_ranks(c.ranks) << " wait"
        << (c.ranks.size() > 1 ? "" : "s") << " in " << c.op;
    if (c.seq) out << " #" << *c.seq;
    if (!c.comm_label.empty()) out << " on " << c.comm_label;
    out << " (" << fmt("%.0f", c.waited_s) << " s)\n";
  }
  if (f.consequences.size() > kShown)
    out << "     - ... and " << f.consequences.size() - kShown << " more ops (see --json)\n";
}

// Several ranks share a node, yet no GPU-to-GPU path inside one was timed.
bool intra_node_unseen(const Report& r) {
  return r.links.source == "nccl_profiler" && r.ranks > static_cast<int64_t>(r.nodes.size()) &&
         !r.links.matrix.intra_node_observed();
}

// Slow links that cost this job less than the reporting bar: not findings, but a
// path that is slow here is slow for the next job too, which may lean on it.
void render_links_below_cost(const Report& r, std::ostream& out) {
  for (const Finding& f : r.links_below_cost) {
    out << "slow link below the cost bar (not a finding): " << f.subkind << " ";
    for (size_t k = 0; k < f.nodes.size(); ++k) out << (k ? "<->" : "") << f.nodes[k];
    if (!f.ranks.empty()) out << " ranks " << join_ranks(f.ranks);
    out << ", cost " << fmt("%.3f", f.cost_s) << " s. " << f.evidence << "\n";
    if (!f.next_command.empty()) out << "   next: " << f.next_command << "\n";
  }
}

// One line on what was seen of the links, and how: never "fine" when unseen.
void render_links(const Report& r, std::ostream& out) {
  const LinkMatrix& m = r.links.matrix;
  if (r.links.source == "none") {
    out << "links: not observed: no NCCL profiler plugin events (`ringside run --links`, NCCL >= "
           "2.23) and no send/recv pairs to time\n";
    return;
  }
  if (r.links.source == "send_recv") {
    out << "links: timed from send/recv pairs only (no NCCL profiler plugin events; "
           "`ringside run --links` gives every inter-node link)\n";
    return;
  }
  std::vector<const NodeLink*> order;
  for (const NodeLink& n : m.node_links) order.push_back(&n);
  std::stable_sort(order.begin(), order.end(), [](const NodeLink* a, const NodeLink* b) {
    return a->best_gbps < b->best_gbps;
  });
  constexpr size_t kShown = 6;
  out << "links: " << count_text(static_cast<int64_t>(m.rank_links.size()), "rank link")
      << " from NCCL's profiler plugin; node to node, GB/s while transmitting, mean/fastest "
         "steps (slowest first):";
  for (size_t i = 0; i < order.size() && i < kShown; ++i) {
    const NodeLink& n = *order[i];
    out << (i ? ", " : " ") << r.nodes[static_cast<size_t>(n.src_node)] << "->"
        << r.nodes[static_cast<size_t>(n.dst_node)] << " " << fmt("%.2f", n.gbps) << "/"
        << fmt("%.2f", n.best_gbps);
  }
  if (order.size() > kShown) out << ", ... (" << order.size() << " in --json)";
  out << "\n";
  if (intra_node_unseen(r)) {
    out << "links inside nodes: not observed: no send/recv between GPUs of one node (a ring "
           "collective's kernel spans the whole ring, so NCCL times no single GPU pair)\n";
  }
  render_links_below_cost(r, out);
}

}  // namespace

// Everything shown is printable: file names and any text a trace carried
// cannot reach the terminal as control sequences.
void render_finding(const Finding& f, size_t number, std::ostream& shown) {
  std::ostringstream out;
  out << "\n" << number << ". [" << f.kind << (f.subkind.empty() ? "" : "/" + f.subkind) << "]";
  if (!f.ranks.empty()) out << " rank" << (f.ranks.size() > 1 ? "s " : " ") << join_ranks(f.ranks);
  if (!f.nodes.empty()) {
    out << "  node" << (f.nodes.size() > 1 ? "s " : " ");
    for (size_t k = 0; k < f.nodes.size(); ++k)
      out << (k ? (f.kind == "slow_link" ? "<->" : ",") : "") << f.nodes[k];
  }
  if (f.comm) out << "  comm " << f.comm_label;
  if (f.seq) out << "  op #" << *f.seq;
  if (f.cost_s > 0 && f.kind != "hang") out << "  cost " << fmt("%.2f", f.cost_s) << " s";
  out << "  (confidence " << fmt("%.0f", 100 * f.confidence) << "%)\n";
  out << "   " << f.evidence << "\n";
  if (!f.next_command.empty()) out << "   next: " << f.next_command << "\n";
  render_consequences(f, out);
  shown << printable(out.str(), true);
}

void render_text(const Report& r, std::ostream& shown, size_t max_findings) {
  std::ostringstream out;
  std::string verdict = r.verdict;
  for (char& c : verdict) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out << "ringside analyze: job " << r.job << (r.step.empty() ? "" : " step " + r.step) << ", "
      << count_text(r.ranks, "rank") << " on "
      << count_text(static_cast<int64_t>(r.nodes.size()), "node") << (r.simulated ? " (sim)" : "")
      << "\n";
  if (r.extra.contains("window")) {
    const auto& w = r.extra["window"];
    out << "window: each rank's last " << w.value("ops_per_rank", uint64_t{0}) << " ops, "
        << fmt("%.1f", w.value("start_s", 0.0)) << "-" << fmt("%.1f", w.value("end_s", 0.0))
        << " s into the job\n";
  }
  out << "verdict: " << verdict;
  if (r.what_if.actual_s > 0 && r.verdict != "hung") {
    out << "  (job " << fmt("%.1f", r.what_if.actual_s) << " s";
    if (r.what_if.ideal_s > 0 && r.what_if.ideal_s < r.what_if.actual_s) {
      out << ", " << fmt("%.2f", r.what_if.actual_s / r.what_if.ideal_s)
          << "x slower than without the causes below";
    }
    out << ")";
  }
  out << "\n";
  if (r.findings.empty()) {
    out << (r.links.source == "none"
                ? "no findings: collectives and GPUs look consistent across ranks (links were not "
                  "observed).\n"
            : !r.links_below_cost.empty()
                ? "no findings: collectives and GPUs look consistent across ranks; the slow links "
                  "listed below cost this job too little to report.\n"
            : intra_node_unseen(r)
                ? "no findings: collectives, inter-node links and GPUs look consistent across "
                  "ranks (paths inside nodes were not observed).\n"
                : "no findings: collectives, links and GPUs look consistent across ranks.\n");
  }
  for (size_t i = 0; i < r.findings.size() && i < max_findings; ++i)
    render_finding(r.findings[i], i + 1, out);
  if (r.findings.size() > max_findings) {
    out << "\n... and " << r.findings.size() - max_findings << " more findings (see --json)\n";
  }
  if (!r.what_if.per_cause.empty()) {
    const auto& top = r.what_if.per_cause.front();
    out << "\nwhat-if: " << fmt("%.1f", r.what_if.actual_s) << " s actual, ~"
        << fmt("%.1f", r.what_if.ideal_s) << " s without the diagnosed causes; "
        << fmt("%.0f", 100 * top.saved_s / (r.what_if.actual_s - r.what_if.ideal_s))
        << "% of the loss is due to " << top.cause << "\n";
  }
  render_links(r, out);
  if (r.clock.aligned && r.clock.max_abs_offset_ms >= 0.1) {
    out << "clocks: node offsets up to " << fmt("%.1f", r.clock.max_abs_offset_ms)
        << " ms, corrected\n";
  }
  if (!r.clock.unaligned_nodes.empty()) {
    std::string names;
    for (const auto& n : r.clock.unaligned_nodes) names += (names.empty() ? "" : ", ") + n;
    out << "clocks: " << names << (r.clock.unaligned_nodes.size() == 1 ? " shares" : " share")
        << " no collective with " << r.clock.reference_node
        << " that ends together on its members (all-reduce, all-gather, reduce-scatter, "
           "all-to-all): their clock offsets cannot be estimated, so times compared across "
           "these nodes are only as good as the nodes' clock sync\n";
  }
  if (r.extra.contains("usage") &&
      r.extra["usage"].value("probe_cpu_pct", nlohmann::json()).is_object()) {
    const auto& cpu = r.extra["usage"]["probe_cpu_pct"];
    out << "probe: its own threads used " << fmt("%.2f", cpu.value("mean", 0.0))
        << "% of a core per rank (at most " << fmt("%.2f", cpu.value("max", 0.0)) << "%, on rank "
        << cpu.value("max_rank", int64_t{-1}) << ")\n";
  }
  shown << printable(out.str(), true);
}

}  // namespace ringside::analysis
