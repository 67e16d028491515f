#include "report/report_json.h"

#include <cstdio>

namespace ringside::analysis {
namespace {

std::string hex(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
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
