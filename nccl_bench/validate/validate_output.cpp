#include "validate/validate_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ringside/count_text.h"

namespace ringside::bench {

namespace {

std::string num(double v) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

nlohmann::json jnum(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s + " ";
}

std::string link_name(const ValidateData& d, const NodePair& p) {
  return d.nodes[static_cast<size_t>(p.first)] + "<->" + d.nodes[static_cast<size_t>(p.second)];
}

}  // namespace

std::string render_tables(const ValidateData& d, const Verdict& v, const ValidateRunInfo& info) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "# nccl_bench validate: %s, %s, level %s, fleet threshold %.0f%%, floors %s, "
                "%s, %.1f s\n#\n",
                count_text(static_cast<int64_t>(d.nodes.size()), "node").c_str(),
                count_text(info.nranks, "rank").c_str(), info.level.c_str(), info.threshold_pct,
                info.floors.empty() ? "none" : info.floors.c_str(),
                count_text(info.rounds, "inter-node round").c_str(), info.seconds);
  out += line;
  size_t wnode = 4, wmodel = 5;
  for (size_t n = 0; n < d.nodes.size(); ++n) {
    wnode = std::max(wnode, d.nodes[n].size());
    wmodel = std::max(wmodel, d.models[n].size());
  }
  out += "# " + pad("node", wnode) + pad("gpus", 4) + pad("model", wmodel);
  for (uint64_t s : d.sizes) out += pad("intra@" + format_size(s), 11);
  out += pad("copy min", 10) + pad("status", 6) + "reasons\n";
  for (size_t n = 0; n < d.nodes.size(); ++n) {
    const NodeVerdict& nv = v.nodes[n];
    out += "  " + pad(d.nodes[n], wnode) + pad(std::to_string(d.gpus[n]), 4) +
           pad(d.models[n], wmodel);
    for (size_t s = 0; s < d.sizes.size(); ++s) out += pad(num(d.intra[n][s]), 11);
    double copy_min = NAN;
    for (double x : n < d.copy.size() ? d.copy[n] : std::vector<double>{}) {
      if (!std::isnan(x)) copy_min = std::isnan(copy_min) ? x : std::min(copy_min, x);
    }
    out += pad(num(copy_min), 10);
    std::string why = join(nv.reasons, "; ");
    if (!nv.warnings.empty())
      why += std::string(why.empty() ? "" : "; ") + "warning: " + join(nv.warnings, "; ");
    if (!nv.unchecked.empty())
      why += std::string(why.empty() ? "" : "; ") + "not compared: " + join(nv.unchecked, "; ");
    out += pad(nv.pass ? "PASS" : "FAIL", 6) + why + "\n";
  }
  out += "#\n";
  if (!d.pairs.empty()) {
    size_t wlink = 4;
    for (const PairResult& p : d.pairs) wlink = std::max(wlink, link_name(d, p.nodes).size());
    out += "# " + pad("link", wlink);
    for (uint64_t s : d.sizes) out += pad("busbw@" + format_size(s), 11);
    out += pad("status", 6) + "reasons\n";
    for (size_t p = 0; p < d.pairs.size(); ++p) {
      out += "  " + pad(link_name(d, d.pairs[p].nodes), wlink);
      for (size_t s = 0; s < d.sizes.size(); ++s) out += pad(num(d.pairs[p].busbw[s]), 11);
      out += pad(link_status_name(v.links[p].status), 6) + join(v.links[p].reasons, "; ") + "\n";
    }
    out +=
        "#   (busbw: inter-node sendrecv GB/s, best rail; SLOW* = slow because of a failing "
        "node)\n#\n";
  }
  if (!d.global.empty()) {
    out += "# global all_reduce busbw:";
    for (size_t s = 0; s < d.global.size(); ++s)
      out += " " + format_size(d.sizes[s]) + "=" + num(d.global[s]);
    out += " GB/s\n";
  }
  out += "#   (copy min: the node's slowest GPU, device-to-device copy GB/s at " +
         format_size(copy_bytes(d.sizes)) +
         "; \"not compared\": a check that could not be made: no floor and no peer to compare "
         "with)\n";
  for (const std::string& r : v.fleet_reasons) out += "# fleet FAIL: " + r + "\n";
  int bad_nodes = 0, bad_links = 0;
  for (const NodeVerdict& n : v.nodes) bad_nodes += n.pass ? 0 : 1;
  for (const LinkVerdict& l : v.links) bad_links += l.status == LinkStatus::kFail ? 1 : 0;
  std::snprintf(line, sizeof line, "# verdict: %s (%d of %zu nodes failed, %d links failed)\n",
                v.pass ? "PASS" : "FAIL", bad_nodes, d.nodes.size(), bad_links);
  out += line;
  return out;
}

std::vector<std::vector<std::string>> drain_commands(const ValidateData& d, const Verdict& v) {
  std::vector<std::vector<std::string>> cmds;
  for (size_t n = 0; n < d.nodes.size(); ++n) {
    if (v.nodes[n].pass) continue;
    std::string reason = "ringside validate: " + v.nodes[n].reasons.front();
    if (v.nodes[n].reasons.size() > 1)
      reason += " (+" + std::to_string(v.nodes[n].reasons.size() - 1) + " more)";
    for (char& c : reason) {
      if (c == '"' || c == '\n') c = '\'';
    }
    if (reason.size() > 200) reason = reason.substr(0, 197) + "...";
    cmds.push_back(
        {"scontrol", "update", "nodename=" + d.nodes[n], "state=drain", "reason=" + reason});
  }
  return cmds;
}

std::string render_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const auto eq = a.find('=');
    if (a.rfind("reason=", 0) == 0 && eq != std::string::npos) {
      out += a.substr(0, eq + 1) + "\"" + a.substr(eq + 1) + "\"";
    } else {
      out += a;
    }
  }
  return out;
}

namespace {
// The fields every validate report starts with: how the run was made.
nlohmann::json run_fields(const ValidateRunInfo& info, const std::vector<uint64_t>& sizes) {
  nlohmann::json j;
  j["schema"] = "ringside.validate/1";
  j["level"] = info.level;
  j["fleet_threshold_pct"] = info.threshold_pct;
  j["baseline"] = info.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(info.baseline);
  j["floors"] = info.floors.empty() ? nlohmann::json(nullptr) : nlohmann::json(info.floors);
  j["ranks"] = info.nranks;
  j["seconds"] = info.seconds;
  j["rounds"] = info.rounds;
  j["sizes"] = sizes;
  j["gpu_pair_size"] = info.gpu_pair_size;
  return j;
}
}  // namespace

std::string render_json(const ValidateData& d, const Verdict& v, const ValidateRunInfo& info) {
  nlohmann::json j = run_fields(info, d.sizes);
  j["verdict"] = v.pass ? "pass" : "fail";
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t n = 0; n < d.nodes.size(); ++n) {
    nlohmann::json intra = nlohmann::json::array(), copy = nlohmann::json::array(),
                   spread = nlohmann::json::array();
    for (double x : d.intra[n]) intra.push_back(jnum(x));
    if (n < d.intra_spread.size())
      for (double x : d.intra_spread[n]) spread.push_back(jnum(x));
    if (n < d.copy.size())
      for (double x : d.copy[n]) copy.push_back(jnum(x));
    nlohmann::json copy_passes = nlohmann::json::array();
    if (n < d.copy_passes.size()) {
      for (const auto& gpu : d.copy_passes[n]) {
        nlohmann::json row = nlohmann::json::array();
        for (double x : gpu) row.push_back(jnum(x));
        copy_passes.push_back(row);
      }
    }
    nlohmann::json gpu_pairs = nlohmann::json::array();
    if (n < d.gpu_pairs.size()) {
      const PairPasses& g = d.gpu_pairs[n];
      const PassJudgement jg = judge_passes(g, std::nullopt, info.threshold_pct);
      for (size_t p = 0; p < g.pairs.size(); ++p) {
        nlohmann::json passes = nlohmann::json::array();
        for (const auto& pass : g.passes) passes.push_back(jnum(p < pass.size() ? pass[p] : NAN));
        gpu_pairs.push_back({{"gpus", {g.pairs[p].first, g.pairs[p].second}},
                             {"sendrecv_gbps", passes},
                             {"best_gbps", jnum(jg.best[p])},
                             {"others_median_gbps", jnum(jg.typical[p])},
                             {"passes_below", jg.below[p]},
                             {"passes_compared", jg.measured[p]}});
      }
    }
    nodes.push_back({{"node", d.nodes[n]},
                     {"gpus", d.gpus[n]},
                     {"model", d.models[n]},
                     {"intra_node_all_reduce_busbw", intra},
                     {"intra_node_all_reduce_spread", spread},
                     {"device_copy_gbps", copy},
                     {"device_copy_passes", copy_passes},
                     {"gpu_pairs", gpu_pairs},
                     {"status", v.nodes[n].pass ? "PASS" : "FAIL"},
                     {"reasons", v.nodes[n].reasons},
                     {"warnings", v.nodes[n].warnings},
                     {"not_compared", v.nodes[n].unchecked}});
  }
  j["nodes"] = nodes;
  nlohmann::json links = nlohmann::json::array();
  for (size_t p = 0; p < d.pairs.size(); ++p) {
    nlohmann::json bw = nlohmann::json::array(), rails = nlohmann::json::array();
    for (double x : d.pairs[p].busbw) bw.push_back(jnum(x));
    nlohmann::json passes = nlohmann::json::array();
    for (const auto& pass : d.pairs[p].passes) {
      nlohmann::json row = nlohmann::json::array();
      for (double x : pass) row.push_back(jnum(x));
      passes.push_back(row);
    }
    for (const auto& per_size : d.pairs[p].rails) {
      nlohmann::json r = nlohmann::json::array();
      for (double x : per_size) r.push_back(jnum(x));
      rails.push_back(r);
    }
    links.push_back({{"nodes",
                      {d.nodes[static_cast<size_t>(d.pairs[p].nodes.first)],
                       d.nodes[static_cast<size_t>(d.pairs[p].nodes.second)]}},
                     {"sendrecv_busbw", bw},
                     {"sendrecv_passes", passes},
                     {"rails_busbw", rails},
                     {"status", link_status_name(v.links[p].status)},
                     {"reasons", v.links[p].reasons}});
  }
  j["links"] = links;
  nlohmann::json global = nlohmann::json::array();
  for (double x : d.global) global.push_back(jnum(x));
  j["global_all_reduce_busbw"] = global;
  j["fleet_reasons"] = v.fleet_reasons;
  nlohmann::json drains = nlohmann::json::array();
  for (const auto& c : drain_commands(d, v)) drains.push_back(render_command(c));
  j["drain_commands"] = drains;
  return j.dump(2) + "\n";
}

std::string render_abort_json(const ValidateRunInfo& info, const std::vector<uint64_t>& sizes,
                              const ValidateAbort& a) {
  nlohmann::json j = run_fields(info, sizes);
  j["verdict"] = "fail";
  j["nodes"] = nlohmann::json::array();
  j["links"] = nlohmann::json::array();
  j["global_all_reduce_busbw"] = nlohmann::json::array();
  j["fleet_reasons"] = nlohmann::json::array();
  j["drain_commands"] = nlohmann::json::array();
  j["aborted"] = {{"rank", a.rank},
                  {"kind", a.kind},
                  {"message", a.message},
                  {"peer_ranks", a.peer_ranks},
                  {"peer_nodes", a.peer_nodes}};
  return j.dump(2) + "\n";
}

}  // namespace ringside::bench
