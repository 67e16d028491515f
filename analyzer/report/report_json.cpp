#include "report/report_json.h"

#include <algorithm>
#include <cstdio>

namespace ringside::analysis {
namespace {

std::string hex(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
}

std::string node_name(const Report& r, int i) {
  return i >= 0 && static_cast<size_t>(i) < r.nodes.size() ? r.nodes[static_cast<size_t>(i)] : "";
}

nlohmann::json share_json(double v) {
  return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v);
}

nlohmann::json rank_link_json(const Report& r, const RankLink& l) {
  return {{"src", l.src},
          {"dst", l.dst},
          {"src_node", node_name(r, l.src_node)},
          {"dst_node", node_name(r, l.dst_node)},
          {"gbps", l.gbps},
          {"best_gbps", l.best_gbps},
          {"bytes", l.bytes},
          {"ops", l.ops},
          {"net_s", l.net_s},
          {"peer_wait", share_json(l.peer_wait)},
          {"gpu_wait", share_json(l.gpu_wait)},
          {"recv_wait", share_json(l.recv_wait)}};
}

// At most this many rank links are listed (the slowest); node links and the
// per-communicator summaries are always complete.
constexpr size_t kMaxRankLinks = 1024;

nlohmann::json links_json(const Report& r) {
  const LinkMatrix& m = r.links.matrix;
  nlohmann::json j;
  j["source"] = r.links.source;
  j["intra_node_observed"] = m.intra_node_observed();
  j["node_links"] = nlohmann::json::array();
  for (const NodeLink& n : m.node_links) {
    j["node_links"].push_back({{"src", node_name(r, n.src_node)},
                               {"dst", node_name(r, n.dst_node)},
                               {"links", n.links},
                               {"bytes", n.bytes},
                               {"gbps", n.gbps},
                               {"min_gbps", n.min_gbps},
                               {"best_gbps", n.best_gbps},
                               {"peer_wait", share_json(n.peer_wait)}});
  }
  std::vector<const RankLink*> order;
  for (const RankLink& l : m.rank_links) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(),
                   [](const RankLink* a, const RankLink* b) { return a->gbps < b->gbps; });
  if (order.size() > kMaxRankLinks) order.resize(kMaxRankLinks);
  j["rank_links"] = nlohmann::json::array();
  for (const RankLink* l : order) j["rank_links"].push_back(rank_link_json(r, *l));
  j["rank_links_total"] = m.rank_links.size();
  j["per_comm"] = nlohmann::json::array();
  for (const CommLinks& c : m.per_comm) {
    std::vector<double> bw;
    uint64_t bytes = 0;
    for (const RankLink& l : c.links) {
      bytes += l.bytes;
      if (l.gbps > 0) bw.push_back(l.gbps);
    }
    std::sort(bw.begin(), bw.end());
    j["per_comm"].push_back({{"comm", hex(c.id)},
                             {"comm_label", c.label},
                             {"links", c.links.size()},
                             {"bytes", bytes},
                             {"median_gbps", bw.empty() ? 0.0 : bw[bw.size() / 2]},
                             {"min_gbps", bw.empty() ? 0.0 : bw.front()}});
  }
  j["unplaced_comms"] = m.unplaced_comms;
  j["below_cost"] = nlohmann::json::array();
  for (const Finding& f : r.links_below_cost) j["below_cost"].push_back(finding_to_json(f));
  return j;
}

}  // namespace

nlohmann::json finding_to_json(const Finding& f) {
  nlohmann::json j;
  j["kind"] = f.kind;
  if (!f.subkind.empty()) j["subkind"] = f.subkind;
  j["ranks"] = f.ranks;
  j["nodes"] = f.nodes;
  j["comm"] = f.comm ? nlohmann::json(hex(*f.comm)) : nlohmann::json(nullptr);
  if (!f.comm_label.empty()) j["comm_label"] = f.comm_label;
  j["seq"] = f.seq ? nlohmann::json(*f.seq) : nlohmann::json(nullptr);
  if (f.comm) {
    j["comm_role"] = f.comm_role;
    j["comm_members"] = f.comm_members;
  }
  j["severity"] = f.severity;
  j["confidence"] = f.confidence;
  j["evidence"] = f.evidence;
  j["cost_s"] = f.cost_s;
  j["next_command"] = f.next_command;
  j["consequences"] = nlohmann::json::array();
  for (const Consequence& c : f.consequences) {
    j["consequences"].push_back({{"ranks", c.ranks},
                                 {"comm", c.comm ? nlohmann::json(hex(*c.comm)) : nullptr},
                                 {"comm_label", c.comm_label},
                                 {"seq", c.seq ? nlohmann::json(*c.seq) : nullptr},
                                 {"op", c.op},
                                 {"waited_s", c.waited_s}});
  }
  for (auto it = f.extra.begin(); it != f.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json j;
  j["schema"] = kReportSchema;
  j["job"] = r.job;
  if (!r.step.empty()) j["step"] = r.step;
  j["ranks"] = r.ranks;
  j["nodes"] = r.nodes;
  j["verdict"] = r.verdict;
  j["findings"] = nlohmann::json::array();
  for (const auto& f : r.findings) j["findings"].push_back(finding_to_json(f));
  nlohmann::json w;
  w["actual_s"] = r.what_if.actual_s;
  w["ideal_s"] = r.what_if.ideal_s;
  w["slowdown"] = r.what_if.ideal_s > 0 ? r.what_if.actual_s / r.what_if.ideal_s : 1.0;
  w["per_cause"] = nlohmann::json::array();
  for (const auto& c : r.what_if.per_cause) {
    w["per_cause"].push_back({{"finding", c.finding},
                              {"cause", c.cause},
                              {"saved_s", c.saved_s},
                              {"fraction", c.fraction}});
  }
  w["per_rank"] = nlohmann::json::array();
  for (const auto& p : r.what_if.per_rank)
    w["per_rank"].push_back({{"rank", p.rank}, {"saved_s", p.saved_s}});
  j["what_if"] = w;
  nlohmann::json clock;
  clock["aligned"] = r.clock.aligned;
  clock["max_abs_offset_ms"] = r.clock.max_abs_offset_ms;
  clock["node_offsets_ms"] = nlohmann::json::object();
  for (const auto& n : r.clock.nodes) clock["node_offsets_ms"][n.node] = n.offset_ms;
  clock["reference_node"] = r.clock.reference_node;
  clock["unaligned_nodes"] = r.clock.unaligned_nodes;
  j["clock"] = clock;
  j["links"] = links_json(r);
  j["missing_ranks"] = r.missing_ranks;
  j["warnings"] = r.warnings;
  j["simulated"] = r.simulated;
  j["records"] = r.records;
  j["trace_dir"] = r.dir;
  for (auto it = r.extra.begin(); it != r.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ringside::analysis
