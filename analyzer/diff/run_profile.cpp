#include "diff/run_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "diff/sample_summary.h"

namespace ringside::analysis {
namespace {

// A pattern repeats when this share of its ops match the op one period later.
constexpr double kPatternMatch = 0.98;
constexpr size_t kPatternOps = 4096;  // ops looked at to find the pattern
constexpr size_t kMaxPeriod = 512;
constexpr uint64_t kMinStepGroups = 16;  // a communicator with fewer ops marks no steps

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The communicator whose ops mark the steps: the widest, then the busiest.
const CommInfo* step_comm(const TraceSet& set, const GroupTable& table) {
  const CommInfo* best = nullptr;
  for (const CommInfo& c : set.comms) {
    const auto& groups = table.comms()[static_cast<size_t>(c.index)].groups;
    if (groups.size() < kMinStepGroups) continue;
    if (best == nullptr || c.nranks > best->nranks ||
        (c.nranks == best->nranks &&
         groups.size() > table.comms()[static_cast<size_t>(best->index)].groups.size()))
      best = &c;
  }
  return best;
}

nlohmann::json steps_json(const TraceSet& set, const GroupTable& table) {
  const CommInfo* c = step_comm(set, table);
  if (c == nullptr) return nullptr;
  const auto& groups = table.comms()[static_cast<size_t>(c->index)].groups;
  const size_t period = ops_per_step(groups.span());
  if (period == 0) return nullptr;
  std::vector<double> steps;
  // Step k ends with the last completion of its last op; the first step has no
  // start and is left out.
  for (size_t end = 2 * period - 1; end < groups.size(); end += period) {
    const int64_t a = groups[end - period].max_end, b = groups[end].max_end;
    if (a == kNever || b == kNever || b < a) continue;
    steps.push_back(static_cast<double>(b - a) / 1e9);
  }
  if (steps.size() < 2) return nullptr;
  nlohmann::json j = summary_to_json(summarize(std::move(steps), kProfileSample), "s");
  j["comm_key"] = comm_shape_key(*c);
  j["comm_label"] = c->label;
  j["ops_per_step"] = period;
  return j;
}

nlohmann::json busbw_json(const TraceSet& set, const GroupTable& table) {
  std::vector<const CommLinkStats*> order;
  for (const CommLinkStats& l : table.comm_links())
    if (l.count > 0 && !l.busbw.empty()) order.push_back(&l);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->count > b->count; });
  if (order.size() > kProfileMaxBusbw) order.resize(kProfileMaxBusbw);
  nlohmann::json out = nlohmann::json::array();
  for (const CommLinkStats* l : order) {
    const CommInfo& c = set.comms[static_cast<size_t>(l->comm)];
    // The sample holds the last ops, written round-robin once full: oldest first again.
    std::vector<double> values(l->busbw.begin(), l->busbw.end());
    if (l->count > values.size())
      std::rotate(values.begin(), values.begin() + static_cast<long>(l->count % values.size()),
                  values.end());
    SampleSummary s = summarize(std::move(values), kProfileBusbwSample);
    s.count = l->count;  // the sample holds at most 256 of them
    nlohmann::json j = summary_to_json(s, "gbps");
    j["sampled"] = l->busbw.size();
    j["comm_key"] = comm_shape_key(c);
    j["comm_label"] = c.label;
    j["op"] = trace::op_kind_name(static_cast<trace::OpKind>(l->op));
    j["size_log2"] = l->size_log2;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json ranks_json(const TraceSet& set, const RankStatsPass& stats) {
  const size_t n = std::min(set.ranks.size(), kProfileMaxRanks);
  nlohmann::json node = nlohmann::json::array(), ops = nlohmann::json::array(),
                 excess = nlohmann::json::array(), sd = nlohmann::json::array(),
                 peer_gap = nlohmann::json::array(), last = nlohmann::json::array();
  for (size_t r = 0; r < n; ++r) {
    node.push_back(set.ranks[r].node_index);
    const Lateness* l = r < stats.ranks().size() ? &stats.ranks()[r].total : nullptr;
    const double g = l ? static_cast<double>(l->groups) : 0;
    ops.push_back(l ? l->groups : 0);
    const double mean = l ? l->mean_excess() : 0;
    excess.push_back(mean / 1e6);
    const double var = g > 1 ? std::max(0.0, (l->excess_sq_sum - g * mean * mean) / (g - 1)) : 0;
    sd.push_back(std::sqrt(var) / 1e6);
    peer_gap.push_back(l ? (l->mean_gap() - mean) / 1e6 : 0);
    last.push_back(g > 0 ? static_cast<double>(l->last) / g : 0);
  }
  return {{"count", n},           {"node", node},
          {"ops", ops},           {"mean_excess_ms", excess},
          {"sd_excess_ms", sd},   {"peer_gap_ms", peer_gap},
          {"last_fraction", last}};
}

nlohmann::json gpus_json(const TraceSet& set) {
  const size_t n = std::min(set.ranks.size(), kProfileMaxRanks);
  nlohmann::json clock_samples = nlohmann::json::array(), clock = nlohmann::json::array(),
                 temp = nlohmann::json::array(), slow = nlohmann::json::array();
  for (size_t r = 0; r < n; ++r) {
    const GpuSummary& g = set.ranks[r].gpu;
    clock_samples.push_back(g.clock_samples);
    clock.push_back(g.median_sm_clock_mhz);
    temp.push_back(g.max_temperature_c);
    slow.push_back(g.slowdown_fraction());
  }
  return {{"count", n},
          {"clock_samples", clock_samples},
          {"median_sm_clock_mhz", clock},
          {"max_temperature_c", temp},
          {"slowdown_fraction", slow}};
}

}  // namespace

std::string comm_shape_key(const CommInfo& c) {
  // FNV-1a over the members: short whatever the communicator's size.
  uint64_t h = 1469598103934665603ull;
  for (int64_t m : c.members) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<uint64_t>(m) >> (8 * i) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return (c.role.empty() ? std::string("comm") : c.role) + "/" + std::to_string(c.nranks) + "/" +
         hex(h);
}

size_t ops_per_step(std::span<const GroupAgg> groups) {
  const size_t n = std::min(groups.size(), kPatternOps);
  for (size_t p = 1; p <= std::min(kMaxPeriod, n / 3); ++p) {
    size_t same = 0;
    for (size_t i = 0; i + p < n; ++i) {
      const GroupAgg &a = groups[i], &b = groups[i + p];
      same += a.op == b.op && a.bytes == b.bytes;
    }
    if (static_cast<double>(same) >= kPatternMatch * static_cast<double>(n - p)) return p;
  }
  return 0;
}

nlohmann::json build_run_profile(const TraceSet& set, const GroupTable& table,
                                 const RankStatsPass& stats) {
  nlohmann::json comms = nlohmann::json::array();
  for (const CommInfo& c : set.comms) {
    if (comms.size() >= kProfileMaxComms) break;
    comms.push_back({{"key", comm_shape_key(c)},
                     {"comm", c.id_hex()},
                     {"label", c.label},
                     {"role", c.role},
                     {"nranks", c.nranks},
                     {"members", c.members}});
  }
  return {{"schema", kProfileSchema},        {"comms", comms},
          {"comms_total", set.comms.size()}, {"steps", steps_json(set, table)},
          {"busbw", busbw_json(set, table)}, {"ranks", ranks_json(set, stats)},
          {"gpus", gpus_json(set)}};
}

}  // namespace ringside::analysis
