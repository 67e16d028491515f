#include "diff/run_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "diff/run_profile.h"
#include "diff/sample_summary.h"
#include "report/format.h"

namespace ringside::analysis {
namespace {

using nlohmann::json;

// Counters are whole numbers: a reading never knows them better than one unit.
constexpr double kCounterResolution = 1.0;

struct Side {
  const json& report;
  const json& profile;
};

std::string size_range(int log2) {
  auto text = [](double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
      bytes /= 1024;
      ++u;
    }
    return fmt("%g ", bytes) + units[u];
  };
  return text(std::ldexp(1.0, log2)) + "-" + text(std::ldexp(1.0, log2 + 1));
}

std::string node_of(const json& report, const json& ranks, size_t r) {
  const int64_t i = ranks.at("node").at(r).get<int64_t>();
  const json& nodes = report.at("nodes");
  return i >= 0 && static_cast<size_t>(i) < nodes.size()
             ? nodes.at(static_cast<size_t>(i)).get<std::string>()
             : "?";
}

using KeyMap = std::map<std::string, std::string>;

Status check_shape(const Side& a, const Side& b, KeyMap& b_to_a) {
  const int64_t ra = a.report.at("ranks").get<int64_t>(), rb = b.report.at("ranks").get<int64_t>();
  if (ra != rb)
    return Status::error("different job shapes: A has " + std::to_string(ra) + " ranks, B has " +
                         std::to_string(rb));
  const size_t na = a.report.at("nodes").size(), nb = b.report.at("nodes").size();
  if (na != nb)
    return Status::error("different job shapes: A has " + std::to_string(na) + " nodes, B has " +
                         std::to_string(nb));
  const json &pa = a.profile.at("ranks").at("node"), &pb = b.profile.at("ranks").at("node");
  for (size_t r = 0; r < std::min(pa.size(), pb.size()); ++r) {
    // -1: no trace of the rank in that run (missing, not moved).
    if (pa.at(r).get<int64_t>() < 0 || pb.at(r).get<int64_t>() < 0) continue;
    if (pa.at(r) != pb.at(r))
      return Status::error("different job shapes: rank " + std::to_string(r) + " is on node " +
                           std::to_string(pa.at(r).get<int64_t>()) + " of A's but node " +
                           std::to_string(pb.at(r).get<int64_t>()) +
                           " of B's (ranks per node differ)");
  }
  // Communicators pair up by key (role, size, members), or, where a member has no
  // trace in one run (-1), by size and the members both runs know.
  // Several communicators can share a key (the same members and role, made twice).
  std::multimap<std::string, const json*> ka;
  for (const json& c : a.profile.at("comms")) ka.emplace(c.at("key"), &c);
  std::vector<const json*> unmatched_b;
  for (const json& c : b.profile.at("comms")) {
    auto it = ka.find(c.at("key"));
    if (it == ka.end()) {
      unmatched_b.push_back(&c);
      continue;
    }
    b_to_a[c.at("key")] = it->first;
    ka.erase(it);
  }
  auto compatible = [](const json& x, const json& y) {
    if (x.at("nranks") != y.at("nranks") || !x.contains("members") || !y.contains("members"))
      return false;
    const auto mx = x.at("members").get<std::vector<int64_t>>();
    const auto my = y.at("members").get<std::vector<int64_t>>();
    if (mx.size() != my.size()) return false;
    // Roles are inferred from what the members did: a member without a trace can
    // change one, so roles must agree only where every member is known.
    const bool all_known = std::none_of(mx.begin(), mx.end(), [](int64_t m) { return m < 0; }) &&
                           std::none_of(my.begin(), my.end(), [](int64_t m) { return m < 0; });
    if (all_known && x.at("role") != y.at("role")) return false;
    for (size_t i = 0; i < mx.size(); ++i)
      if (mx[i] >= 0 && my[i] >= 0 && mx[i] != my[i]) return false;
    return true;
  };
  for (const json* c : unmatched_b) {
    auto it = std::find_if(ka.begin(), ka.end(),
                           [&](const auto& e) { return compatible(*e.second, *c); });
    if (it == ka.end())
      return Status::error("different communicator layouts: " + c->at("label").get<std::string>() +
                           " of B has no communicator of the same role and members in A");
    b_to_a[c->at("key")] = it->first;
    ka.erase(it);
  }
  if (!ka.empty())
    return Status::error(
        "different communicator layouts: " + ka.begin()->second->at("label").get<std::string>() +
        " of A has no communicator of the same role and members in B");
  return {};
}

// B's communicator key as A's.
std::string a_key(const KeyMap& b_to_a, const json& key) {
  auto it = b_to_a.find(key.get<std::string>());
  return it == b_to_a.end() ? key.get<std::string>() : it->second;
}

// Collects changes, then keeps those beyond noise for its area.
class Areas {
 public:
  explicit Areas(double threshold) : threshold_(threshold) {}

  // `scale`: what `relative` divides by; `worse_up`: a larger value is worse.
  void add(Change c, double scale, bool worse_up) {
    const double d = c.b - c.a;
    c.z = c.noise > 0 ? d / c.noise : 0;
    c.relative = scale > 0 ? (worse_up ? d : -d) / scale : 0;
    if (c.noise <= 0 && std::abs(c.relative) > 1e-9) c.z = d > 0 ? INFINITY : -INFINITY;
    pending_[c.area].push_back(std::move(c));
  }

  void finish(DiffResult& out, const DiffOptions& options) {
    for (auto& [area, changes] : pending_) {
      out.compared.emplace_back(area, changes.size());
      const double zc = noise_z(changes.size());
      for (Change& c : changes) {
        if (!(std::abs(c.z) >= zc)) continue;
        c.exceeds_threshold = std::abs(c.relative) > threshold_;
        (c.relative > 0 ? out.worse : out.better).push_back(c);
      }
    }
    auto order = [](const Change& x, const Change& y) {
      return std::abs(x.relative) > std::abs(y.relative);
    };
    std::stable_sort(out.worse.begin(), out.worse.end(), order);
    std::stable_sort(out.better.begin(), out.better.end(), order);
    out.worse_total = out.worse.size();
    out.better_total = out.better.size();
    // Bounded output: at most max_listed per area and direction.
    for (auto* list : {&out.worse, &out.better}) {
      std::map<std::string, size_t> per_area;
      std::vector<Change> kept;
      for (Change& c : *list)
        if (per_area[c.area]++ < options.max_listed) kept.push_back(std::move(c));
      *list = std::move(kept);
    }
  }

 private:
  double threshold_;
  std::map<std::string, std::vector<Change>> pending_;
};

Status compare_steps(const Side& a, const Side& b, const KeyMap& b_to_a, Areas& areas,
                     std::vector<std::string>& notes) {
  const json &sa = a.profile.at("steps"), &sb = b.profile.at("steps");
  if (sa.is_null() || sb.is_null()) {
    notes.push_back(std::string("step time not compared: no repeating pattern of ops in ") +
                    (sa.is_null() && sb.is_null() ? "either run"
                     : sa.is_null()               ? "A"
                                                  : "B"));
    return {};
  }
  if (sa.at("comm_key") != a_key(b_to_a, sb.at("comm_key")) ||
      sa.at("ops_per_step") != sb.at("ops_per_step")) {
    notes.push_back("step time not compared: the runs' steps differ (" +
                    sa.at("ops_per_step").dump() + " ops of " +
                    sa.at("comm_label").get<std::string>() + " in A, " +
                    sb.at("ops_per_step").dump() + " ops of " +
                    sb.at("comm_label").get<std::string>() + " in B)");
    return {};
  }
  auto ra = summary_from_json(sa, "s"), rb = summary_from_json(sb, "s");
  if (!ra.ok()) return Status::error("report A: steps: " + ra.message());
  if (!rb.ok()) return Status::error("report B: steps: " + rb.message());
  Change c;
  c.area = "step_time";
  c.what = "median step (" + sa.at("ops_per_step").dump() + " ops of " +
           sa.at("comm_label").get<std::string>() + ")";
  c.unit = "s";
  c.a = ra.value().median;
  c.b = rb.value().median;
  c.noise = std::hypot(ra.value().median_se(), rb.value().median_se());
  areas.add(c, c.a, true);
  return {};
}

Status compare_busbw(const Side& a, const Side& b, const KeyMap& b_to_a, Areas& areas,
                     std::vector<std::string>& notes) {
  size_t only_b = 0, matched = 0;
  std::map<std::tuple<std::string, std::string, int>, const json*> in_a;
  for (const json& e : a.profile.at("busbw"))
    in_a[{e.at("comm_key"), e.at("op"), e.at("size_log2")}] = &e;
  for (const json& eb : b.profile.at("busbw")) {
    auto it = in_a.find({a_key(b_to_a, eb.at("comm_key")), eb.at("op"), eb.at("size_log2")});
    if (it == in_a.end()) {
      ++only_b;
      continue;
    }
    ++matched;
    const json& ea = *it->second;
    auto sa = summary_from_json(ea, "gbps"), sb = summary_from_json(eb, "gbps");
    if (!sa.ok() || !sb.ok()) return Status::error("busbw: " + sa.message() + sb.message());
    // The standard error comes from the values sampled, not from every op.
    auto se = [](SampleSummary s, const json& e) {
      s.count = e.value("sampled", s.sample.size());
      return s.median_se();
    };
    Change c;
    c.area = "busbw";
    c.what = ea.at("op").get<std::string>() + " " + size_range(ea.at("size_log2")) + " on " +
             ea.at("comm_label").get<std::string>();
    c.unit = "GB/s";
    c.a = sa.value().median;
    c.b = sb.value().median;
    c.noise = std::hypot(se(sa.value(), ea), se(sb.value(), eb));
    areas.add(c, c.a, false);
  }
  const size_t only_a = in_a.size() - matched;
  if (only_a + only_b > 0)
    notes.push_back("bus bandwidth: " + std::to_string(only_a) + " (op, size) of A and " +
                    std::to_string(only_b) +
                    " of B have no counterpart in the other run and are not compared");
  return {};
}

void compare_lateness(const Side& a, const Side& b, Areas& areas) {
  const json &la = a.profile.at("ranks"), &lb = b.profile.at("ranks");
  const size_t n = std::min(la.at("count").get<size_t>(), lb.at("count").get<size_t>());
  struct NodeSum {
    double a = 0, b = 0, var = 0, gap = 0;
    int ranks = 0;
  };
  std::map<int64_t, NodeSum> nodes;
  auto se = [](const json& l, size_t r) {
    const double ops = l.at("ops").at(r).get<double>();
    return ops > 1 ? l.at("sd_excess_ms").at(r).get<double>() / std::sqrt(ops) : 0.0;
  };
  // Each rank's excess is over its peers' mean, which a late rank raises: every
  // other rank then looks early.  Measured from the run's median rank instead,
  // one straggler moves only itself.
  auto centre = [n](const json& l) {
    std::vector<double> v;
    for (size_t r = 0; r < n; ++r)
      if (l.at("ops").at(r).get<uint64_t>() >= 2) v.push_back(l.at("mean_excess_ms").at(r));
    return summarize(std::move(v), 0).median;
  };
  const double ca = centre(la), cb = centre(lb);
  for (size_t r = 0; r < n; ++r) {
    if (la.at("ops").at(r).get<uint64_t>() < 2 || lb.at("ops").at(r).get<uint64_t>() < 2) continue;
    const std::string na = node_of(a.report, la, r), nb = node_of(b.report, lb, r);
    Change c;
    c.area = "rank_lateness";
    c.what = "rank " + std::to_string(r) + " (" + (na == nb ? na : na + " -> " + nb) + ")";
    c.unit = "ms/op";
    // Only time behind the peers counts: a rank ahead of them is one that waits
    // (for a late tensor-parallel partner, say), not one that got better.
    c.a = std::max(0.0, la.at("mean_excess_ms").at(r).get<double>() - ca);
    c.b = std::max(0.0, lb.at("mean_excess_ms").at(r).get<double>() - cb);
    const double sa = se(la, r), sb = se(lb, r);
    c.noise = std::hypot(sa, sb);
    // Scale: the compute its peers do before an op (lateness is a share of it).
    const double gap = la.at("peer_gap_ms").at(r).get<double>();
    areas.add(c, gap, true);
    NodeSum& s = nodes[la.at("node").at(r).get<int64_t>()];
    s.a += c.a;
    s.b += c.b;
    s.var += sa * sa + sb * sb;
    s.gap += gap;
    ++s.ranks;
  }
  for (const auto& [node, s] : nodes) {
    if (s.ranks < 2) continue;  // a node of one rank is that rank
    const auto i = static_cast<size_t>(node);
    const std::string na = a.report.at("nodes").at(i), nb = b.report.at("nodes").at(i);
    Change c;
    c.area = "node_lateness";
    c.what = "node " + (na == nb ? na : na + " -> " + nb);
    c.unit = "ms/op";
    c.a = s.a / s.ranks;
    c.b = s.b / s.ranks;
    c.noise = std::sqrt(s.var) / s.ranks;
    areas.add(c, s.gap / s.ranks, true);
  }
}

double robust_spread(std::vector<double> v) {
  return summarize(std::move(v), 0).spread;
}

void compare_gpus(const Side& a, const Side& b, Areas& areas) {
  const json &ga = a.profile.at("gpus"), &gb = b.profile.at("gpus");
  const json& la = a.profile.at("ranks");
  const size_t n = std::min(ga.at("count").get<size_t>(), gb.at("count").get<size_t>());
  // A rank's median clock has no spread of its own kept: the noise is how much
  // the ranks of each run differ, at least one MHz.
  std::vector<double> ca, cb;
  for (size_t r = 0; r < n; ++r) {
    if (ga.at("clock_samples").at(r).get<uint64_t>() == 0 ||
        gb.at("clock_samples").at(r).get<uint64_t>() == 0)
      continue;
    ca.push_back(ga.at("median_sm_clock_mhz").at(r).get<double>());
    cb.push_back(gb.at("median_sm_clock_mhz").at(r).get<double>());
  }
  const double clock_noise =
      std::max(kCounterResolution, std::hypot(robust_spread(ca), robust_spread(cb)));
  for (size_t r = 0; r < n; ++r) {
    const double na = ga.at("clock_samples").at(r).get<double>();
    const double nb = gb.at("clock_samples").at(r).get<double>();
    if (na == 0 || nb == 0) continue;
    const std::string node_a = node_of(a.report, la, r), node_b = node_of(b.report, la, r);
    const std::string who = "rank " + std::to_string(r) + " (" +
                            (node_a == node_b ? node_a : node_a + " -> " + node_b) + ")";
    Change c;
    c.area = "gpu_clock";
    c.what = who + " median SM clock";
    c.unit = "MHz";
    c.a = ga.at("median_sm_clock_mhz").at(r).get<double>();
    c.b = gb.at("median_sm_clock_mhz").at(r).get<double>();
    c.noise = clock_noise;
    areas.add(c, c.a, false);
    // Share of samples with a slowdown reason: binomial noise.
    Change s;
    s.area = "gpu_slowdown";
    s.what = who + " samples slowed down (throttling)";
    s.unit = "fraction";
    s.a = ga.at("slowdown_fraction").at(r).get<double>();
    s.b = gb.at("slowdown_fraction").at(r).get<double>();
    const double p = (s.a * na + s.b * nb) / (na + nb);
    s.noise = std::max(std::sqrt(p * (1 - p) * (1 / na + 1 / nb)), 1 / std::min(na, nb));
    areas.add(s, 1.0, true);
  }
}

json change_json(const Change& c) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return {{"area", c.area},
          {"what", c.what},
          {"unit", c.unit},
          {"a", c.a},
          {"b", c.b},
          {"noise", c.noise},
          {"z", num(c.z)},
          {"relative", c.relative},
          {"exceeds_threshold", c.exceeds_threshold}};
}

json run_json(const DiffRun& r) {
  return {{"source", r.source}, {"job", r.job}, {"ranks", r.ranks}, {"nodes", r.nodes}};
}

}  // namespace

bool DiffResult::regressed() const {
  return std::any_of(worse.begin(), worse.end(),
                     [](const Change& c) { return c.exceeds_threshold; });
}

double noise_z(size_t compared) {
  const double alpha = kFamilyAlpha / static_cast<double>(std::max<size_t>(compared, 1));
  double z = kMinNoiseZ;
  while (std::erfc(z / std::sqrt(2.0)) > alpha) z += 0.01;
  return z;
}

Result<DiffResult> diff_reports(const json& a, const json& b, const DiffOptions& options) {
  DiffResult out;
  out.threshold = options.threshold;
  try {
    for (const auto& [r, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}}) {
      if (!r->contains("profile") || !r->at("profile").is_object())
        return Status::error(std::string("report ") + name +
                             " has no profile (written by an older ringside): analyze its "
                             "traces again or give the trace directory");
      if (r->at("profile").value("schema", "") != kProfileSchema)
        return Status::error(std::string("report ") + name + ": profile schema is not " +
                             kProfileSchema);
    }
    const Side sa{a, a.at("profile")}, sb{b, b.at("profile")};
    KeyMap b_to_a;
    if (Status s = check_shape(sa, sb, b_to_a); !s.ok()) return s;
    for (const auto& [r, run] : {std::pair{&a, &out.a}, std::pair{&b, &out.b}}) {
      run->job = r->value("job", "");
      run->ranks = r->at("ranks").get<int64_t>();
      run->nodes = r->at("nodes").get<std::vector<std::string>>();
    }
    Areas areas(options.threshold);
    if (Status s = compare_steps(sa, sb, b_to_a, areas, out.notes); !s.ok()) return s;
    if (Status s = compare_busbw(sa, sb, b_to_a, areas, out.notes); !s.ok()) return s;
    for (const auto& [r, name] : {std::pair{&a, "A"}, std::pair{&b, "B"}}) {
      const json& p = r->at("profile");
      std::string missing;
      for (size_t i = 0; i < p.at("ranks").at("node").size(); ++i)
        if (p.at("ranks").at("node").at(i).get<int64_t>() < 0)
          missing += (missing.empty() ? "" : ", ") + std::to_string(i);
      if (!missing.empty())
        out.notes.push_back(std::string("ranks without a trace in ") + name + ": " + missing +
                            " (not compared)");
      if (p.at("ranks").at("count").get<int64_t>() < r->at("ranks").get<int64_t>())
        out.notes.push_back(std::string("only the first ") + p.at("ranks").at("count").dump() +
                            " ranks of " + name +
                            " are in its profile: lateness and GPU "
                            "counters of the others are not compared");
    }
    compare_lateness(sa, sb, areas);
    compare_gpus(sa, sb, areas);
    areas.finish(out, options);
  } catch (const json::exception& e) {
    return Status::error(std::string("malformed report: ") + e.what());
  }
  return out;
}

json diff_to_json(const DiffResult& d) {
  json j;
  j["schema"] = kDiffSchema;
  j["a"] = run_json(d.a);
  j["b"] = run_json(d.b);
  j["threshold"] = d.threshold;
  j["regressed"] = d.regressed();
  j["compared"] = json::object();
  for (const auto& [area, n] : d.compared) j["compared"][area] = {{"count", n}, {"z", noise_z(n)}};
  j["worse"] = json::array();
  for (const Change& c : d.worse) j["worse"].push_back(change_json(c));
  j["better"] = json::array();
  for (const Change& c : d.better) j["better"].push_back(change_json(c));
  j["notes"] = d.notes;
  j["worse_total"] = d.worse_total;
  j["better_total"] = d.better_total;
  return j;
}

std::string diff_to_text(const DiffResult& d) {
  std::string t = "A: " + d.a.source + " (job " + d.a.job + ", " + std::to_string(d.a.ranks) +
                  " ranks)\nB: " + d.b.source + " (job " + d.b.job + ", " +
                  std::to_string(d.b.ranks) + " ranks)\n";
  auto line = [](const Change& c) {
    std::string area = c.area;
    area.resize(std::max<size_t>(area.size(), 14), ' ');
    return "  " + area + " " + c.what + ": " + fmt("%.4g", c.a) + " -> " + fmt("%.4g", c.b) + " " +
           c.unit + " (" + fmt("%.1f", 100 * std::abs(c.relative)) +
           (c.relative > 0 ? "% worse" : "% better") + ", noise +-" + fmt("%.2g", c.noise) + ")" +
           (c.exceeds_threshold ? "" : " [below threshold]") + "\n";
  };
  for (const auto& [list, total, name] : {std::tuple{&d.worse, d.worse_total, "worse"},
                                          std::tuple{&d.better, d.better_total, "better"}}) {
    t += std::string("\n") + name + " beyond noise: " + std::to_string(total);
    t += list->size() < total ? " (" + std::to_string(list->size()) + " listed)\n" : "\n";
    for (const Change& c : *list) t += line(c);
  }
  for (const std::string& n : d.notes) t += "note: " + n + "\n";
  t += "\ncompared:";
  for (const auto& [area, n] : d.compared) t += " " + area + " " + std::to_string(n);
  t += "\n";
  if (d.regressed()) {
    t += "verdict: B regressed (worse beyond noise by more than " + fmt("%.0f", 100 * d.threshold) +
         "%): ";
    std::string names;
    for (const Change& c : d.worse) {
      if (!c.exceeds_threshold) continue;
      if (!names.empty()) names += "; ";
      names += c.area + " " + c.what;
    }
    t += names + "\n";
  } else {
    t += "verdict: no regression beyond noise and the " + fmt("%.0f", 100 * d.threshold) +
         "% threshold\n";
  }
  return t;
}

}  // namespace ringside::analysis
