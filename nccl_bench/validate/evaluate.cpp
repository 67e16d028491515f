#include "validate/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "validate/figures.h"

namespace ringside::bench {

namespace {

// The threshold (%) a reading must fall below its peers by: at least the largest of
// its own timing blocks' spread and its peers' typical one (a busy or noisy system
// raises the bar), and at least `threshold_pct`.  NaN spreads are unknown.
double noise_bar(double own_spread, double peer_spread, double threshold_pct) {
  double noise = own_spread;
  if (std::isnan(noise) || (!std::isnan(peer_spread) && peer_spread > noise)) noise = peer_spread;
  return std::isnan(noise) ? threshold_pct : std::max(threshold_pct, 100 * noise);
}

// A reason when `value` is below `floor` or more than threshold below `peers`.
bool judge(const std::string& what, double value, std::optional<double> floor, double peers,
           int npeers, const std::string& peers_name, double threshold_pct, uint64_t size,
           std::vector<std::string>& reasons) {
  if (std::isnan(value)) return false;
  bool bad = false;
  if (floor && value < *floor) {
    reasons.push_back(what + ": " + format_gbps(value) + " below the baseline " +
                      format_gbps(*floor));
    bad = true;
  }
  if (size >= kFleetMinSize && npeers > 0 && !std::isnan(peers) && peers > 0 &&
      value < (1.0 - threshold_pct / 100.0) * peers) {
    reasons.push_back(what + ": " + format_gbps(value) + " is " +
                      format_pct(100.0 * (1.0 - value / peers)) + " below the median " +
                      format_gbps(peers) + " of " + std::to_string(npeers) + " " + peers_name);
    bad = true;
  }
  return bad;
}

// The device copies of every GPU of `model`, pass by pass, and the index of
// (node, GPU slot) among them in `index` ([node][slot], -1 for other models).
PairPasses copy_passes(const ValidateData& d, const std::string& model,
                       std::vector<std::vector<int>>& index) {
  PairPasses r;
  index.assign(d.copy.size(), {});
  size_t npasses = 0;
  for (size_t m = 0; m < d.copy.size() && m < d.models.size(); ++m) {
    index[m].assign(d.copy[m].size(), -1);
    if (d.models[m] != model) continue;
    for (size_t h = 0; h < d.copy[m].size(); ++h) {
      index[m][h] = static_cast<int>(r.pairs.size());
      r.pairs.emplace_back(static_cast<int>(m), static_cast<int>(h));
      if (m < d.copy_passes.size() && h < d.copy_passes[m].size())
        npasses = std::max(npasses, d.copy_passes[m][h].size());
    }
  }
  r.passes.assign(npasses, std::vector<double>(r.pairs.size(), NAN));
  for (size_t k = 0; k < r.pairs.size(); ++k) {
    const auto [m, h] = r.pairs[k];
    const auto& own = d.copy_passes[static_cast<size_t>(m)][static_cast<size_t>(h)];
    for (size_t t = 0; t < own.size(); ++t) r.passes[t][k] = own[t];
  }
  return r;
}

// Each GPU of node `n`: its device-to-device copy (best pass) against the floor, and
// pass by pass against every other GPU of the same model (its node's and the
// others'; validate/pair_passes.h), so a slow GPU stands out inside its own node
// too.  Appends a reason per slow GPU and returns how many there are, or -1 when
// nothing could be compared.
int copy_checks(const ValidateData& d, const Baseline* baseline, double threshold_pct, size_t n,
                std::vector<std::string>& reasons) {
  if (n >= d.copy.size()) return 0;
  const uint64_t size = copy_bytes(d.sizes);
  const auto floor =
      baseline ? baseline->floor(d.models[n], kTestCopy, size) : std::optional<double>{};
  std::vector<std::vector<int>> index;
  const PassJudgement j =
      judge_passes(copy_passes(d, d.models[n], index), std::nullopt, threshold_pct);
  int slow = 0;
  bool compared = false;
  for (size_t g = 0; g < d.copy[n].size(); ++g) {
    const std::string what = "GPU " + std::to_string(g) + " device copy " + format_size(size);
    const size_t k = static_cast<size_t>(index[n][g]);
    compared = compared || floor || j.measured[k] > 0;
    bool bad = judge(what, d.copy[n][g], floor, NAN, 0, "", threshold_pct, size, reasons);
    if (j.slow_by_peers(k)) {
      reasons.push_back(what + ": best " + format_gbps(d.copy[n][g]) + ", more than " +
                        format_pct(threshold_pct) + " below the other " + d.models[n] + " GPUs (" +
                        format_gbps(j.typical[k]) + ") in " + std::to_string(j.below[k]) + " of " +
                        std::to_string(j.measured[k]) + " passes");
      bad = true;
    }
    if (bad) ++slow;
  }
  return compared || d.copy[n].empty() ? slow : -1;
}

// Node `n`'s intra-node all_reduce per size, against the floor and the other
// nodes with the same GPU model and count.  Appends a reason per slow size and
// returns how many there are, or -1 when nothing could be compared.
int intra_checks(const ValidateData& d, const Baseline* baseline, double threshold_pct, size_t n,
                 std::vector<std::string>& reasons) {
  bool compared = false;
  int slow = 0;
  for (size_t s = 0; s < d.sizes.size(); ++s) {
    std::vector<double> peers;
    for (size_t m = 0; m < d.nodes.size(); ++m) {
      if (m != n && d.models[m] == d.models[n] && d.gpus[m] == d.gpus[n])
        peers.push_back(d.intra[m][s]);
    }
    const int npeers = static_cast<int>(
        std::count_if(peers.begin(), peers.end(), [](double x) { return !std::isnan(x); }));
    const auto floor =
        baseline ? baseline->floor(d.models[n], kTestIntra, d.sizes[s]) : std::optional<double>{};
    // A difference within the readings' own spread (this node's, or the peers'
    // typical one) is not evidence: on a busy or noisy system the bar rises.
    std::vector<double> spreads;
    for (size_t m = 0; m < d.nodes.size() && m < d.intra_spread.size(); ++m) {
      if (m != n && d.models[m] == d.models[n] && d.gpus[m] == d.gpus[n])
        spreads.push_back(d.intra_spread[m][s]);
    }
    const double bar = noise_bar(n < d.intra_spread.size() ? d.intra_spread[n][s] : NAN,
                                 median_of(spreads), threshold_pct);
    if (judge("intra-node all_reduce " + format_size(d.sizes[s]), d.intra[n][s], floor,
              median_of(peers), npeers, "peer nodes", bar, d.sizes[s], reasons))
      ++slow;
    compared = compared || std::isnan(d.intra[n][s]) || floor ||
               (npeers > 0 && d.sizes[s] >= kFleetMinSize);
  }
  return compared ? slow : -1;
}

// The node pairs' readings at size index `s`, pass by pass.
PairPasses node_pair_passes(const ValidateData& d, size_t s) {
  PairPasses r;
  size_t npasses = 0;
  for (const PairResult& pr : d.pairs) {
    r.pairs.push_back(pr.nodes);
    npasses = std::max(npasses, pr.passes.size());
  }
  r.passes.assign(npasses, std::vector<double>(d.pairs.size(), NAN));
  for (size_t p = 0; p < d.pairs.size(); ++p) {
    for (size_t t = 0; t < d.pairs[p].passes.size(); ++t) {
      if (s < d.pairs[p].passes[t].size()) r.passes[t][p] = d.pairs[p].passes[t][s];
    }
  }
  return r;
}

// Node pair `p` against its floor and, pass by pass, the other pairs (sizes of
// 1 MiB and more; validate/pair_passes.h), size by size.  Appends a reason per
// slow size; true if any.
bool pair_checks(const ValidateData& d, const Baseline* baseline, double threshold_pct, size_t p,
                 std::vector<std::string>& reasons) {
  const PairResult& pr = d.pairs[p];
  bool slow = false;
  for (size_t s = 0; s < d.sizes.size(); ++s) {
    const std::string what = "inter-node sendrecv " + format_size(d.sizes[s]);
    auto floor_of = [&](int node) {
      return baseline ? baseline->floor(d.models[static_cast<size_t>(node)], kTestInter, d.sizes[s])
                      : std::nullopt;
    };
    const auto fa = floor_of(pr.nodes.first);
    const auto fb = floor_of(pr.nodes.second);
    std::optional<double> floor = fa;
    if (fb && (!floor || *fb < *floor)) floor = fb;
    if (judge(what, pr.busbw[s], floor, NAN, 0, "", threshold_pct, d.sizes[s], reasons))
      slow = true;
    if (d.sizes[s] < kFleetMinSize) continue;
    const PassJudgement j = judge_passes(node_pair_passes(d, s), std::nullopt, threshold_pct);
    if (j.slow_by_peers(p)) {
      reasons.push_back(what + ": best " + format_gbps(pr.busbw[s]) + ", more than " +
                        format_pct(threshold_pct) + " below the other node pairs (" +
                        format_gbps(j.typical[p]) + ") in " + std::to_string(j.below[p]) + " of " +
                        std::to_string(j.measured[p]) + " passes");
      slow = true;
    }
  }
  return slow;
}

// Node `n`'s GPU pairs: the verdict lines.  A GPU with at least two slow pairs,
// more than half of its measured pairs, is the GPU (or its NVLink/PCIe port); other
// slow pairs are the link between their two GPUs.
std::vector<std::string> gpu_pair_reasons(const PairPasses& r, const PassJudgement& j,
                                          std::optional<double> floor, double threshold_pct,
                                          const std::string& what) {
  std::vector<std::string> out;
  int ngpus = 0;
  for (const auto& [a, b] : r.pairs) ngpus = std::max({ngpus, a + 1, b + 1});
  std::vector<bool> gpu_bad(static_cast<size_t>(ngpus), false);
  for (int g = 0; g < ngpus; ++g) {
    int total = 0, bad = 0;
    std::vector<double> own;
    for (size_t p = 0; p < r.pairs.size(); ++p) {
      if (r.pairs[p].first != g && r.pairs[p].second != g) continue;
      if (std::isnan(j.best[p])) continue;
      ++total;
      own.push_back(j.best[p]);
      if (j.is_slow(p)) ++bad;
    }
    if (bad >= 2 && 2 * bad > total) {
      gpu_bad[static_cast<size_t>(g)] = true;
      out.push_back("GPU " + std::to_string(g) + ": " + what + " with " + std::to_string(bad) +
                    " of " + std::to_string(total) +
                    " other GPUs of the node slow (median of their best readings " +
                    format_gbps(median_of(own)) + "): this GPU or its NVLink/PCIe port");
    }
  }
  for (size_t p : j.slow) {
    const auto [a, b] = r.pairs[p];
    if (gpu_bad[static_cast<size_t>(a)] || gpu_bad[static_cast<size_t>(b)]) continue;
    std::string why = "GPU " + std::to_string(a) + "<->GPU " + std::to_string(b) + " " + what +
                      ": best " + format_gbps(j.best[p]);
    if (floor && j.best[p] < *floor) why += ", below the floor " + format_gbps(*floor);
    if (j.slow_by_peers(p)) {
      why += ", more than " + format_pct(threshold_pct) + " below the node's other GPU pairs (" +
             format_gbps(j.typical[p]) + ") in " + std::to_string(j.below[p]) + " of " +
             std::to_string(j.measured[p]) + " passes";
    }
    out.push_back(why + ": the link between these two GPUs");
  }
  return out;
}

// Node `n`'s GPU pairs: the floor for its model at the pairs' size, if any.
std::optional<double> gpu_pair_floor(const ValidateData& d, const Baseline* baseline, size_t n) {
  return baseline ? baseline->floor(d.models[n], kTestIntraPair, d.gpu_pair_size) : std::nullopt;
}

}  // namespace

bool gpu_pairs_suspect(const ValidateData& d, const Baseline* baseline, double threshold_pct) {
  for (size_t n = 0; n < d.gpu_pairs.size(); ++n) {
    if (judge_passes(d.gpu_pairs[n], gpu_pair_floor(d, baseline, n), threshold_pct).suspect())
      return true;
  }
  return false;
}

bool node_pairs_suspect(const ValidateData& d, const Baseline* baseline, double threshold_pct) {
  for (size_t s = 0; s < d.sizes.size(); ++s) {
    if (d.sizes[s] >= kFleetMinSize &&
        judge_passes(node_pair_passes(d, s), std::nullopt, threshold_pct).suspect())
      return true;
  }
  std::vector<std::string> reasons;
  for (size_t p = 0; p < d.pairs.size(); ++p) {
    if (pair_checks(d, baseline, threshold_pct, p, reasons)) return true;
  }
  return false;
}

uint64_t copy_bytes(const std::vector<uint64_t>& sizes) {
  uint64_t b = 64ull << 20;
  for (uint64_t s : sizes) b = std::max(b, s);
  return b;
}

std::vector<int> slow_intra(const ValidateData& d, const Baseline* baseline, double threshold_pct) {
  std::vector<int> out;
  for (size_t n = 0; n < d.nodes.size(); ++n) {
    std::vector<std::string> reasons;
    if (intra_checks(d, baseline, threshold_pct, n, reasons) > 0)
      out.push_back(static_cast<int>(n));
  }
  return out;
}

bool copies_suspect(const ValidateData& d, const Baseline* baseline, double threshold_pct) {
  std::vector<std::vector<int>> index;
  for (size_t n = 0; n < d.copy.size(); ++n) {
    if (judge_passes(copy_passes(d, d.models[n], index), std::nullopt, threshold_pct).suspect())
      return true;
    std::vector<std::string> reasons;
    if (copy_checks(d, baseline, threshold_pct, n, reasons) > 0) return true;
  }
  return false;
}

std::string format_size(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

const char* link_status_name(LinkStatus s) {
  switch (s) {
    case LinkStatus::kPass:
      return "PASS";
    case LinkStatus::kFail:
      return "FAIL";
    case LinkStatus::kAttributed:
      return "SLOW*";
  }
  return "?";
}

Verdict evaluate(const ValidateData& d, const Baseline* baseline, double threshold_pct) {
  const size_t nn = d.nodes.size();
  const size_t ns = d.sizes.size();
  Verdict v;
  v.nodes.resize(nn);
  v.links.resize(d.pairs.size());
  auto floor_of = [&](const std::string& model, const char* test,
                      uint64_t size) -> std::optional<double> {
    return baseline ? baseline->floor(model, test, size) : std::nullopt;
  };

  for (size_t n = 0; n < nn; ++n) {
    for (const std::string& r : d.health_fail[n]) v.nodes[n].reasons.push_back(r);
    v.nodes[n].warnings = d.health_warn[n];
  }

  // What no check of this run could cover, said rather than passed silently.
  for (size_t n = 0; n < nn; ++n) {
    if (!baseline || (!baseline->has_model(d.models[n]) && !baseline->has_model("default")))
      v.nodes[n].unchecked.push_back("floors: no entry for " + d.models[n] +
                                     " in the floor table (add one with --baseline)");
    if (nn == 1)
      v.nodes[n].unchecked.push_back("inter-node: one node, no node pair to test its NIC with");
    else if (nn == 2)
      v.nodes[n].unchecked.push_back(
          "inter-node: two nodes, one pair: a slow pair fails as a link, not as a node's NIC");
  }

  for (size_t n = 0; n < nn; ++n) {
    if (copy_checks(d, baseline, threshold_pct, n, v.nodes[n].reasons) < 0)
      v.nodes[n].unchecked.push_back(
          "device copy: fewer than 2 other GPUs of this model to compare with, and no floor");
  }

  // Intra-node all_reduce, against the floor and the peers of the same kind.
  for (size_t n = 0; n < nn; ++n) {
    if (intra_checks(d, baseline, threshold_pct, n, v.nodes[n].reasons) < 0) {
      v.nodes[n].unchecked.push_back("intra-node all_reduce: no other node with " +
                                     std::to_string(d.gpus[n]) + " x " + d.models[n] +
                                     " and no floor");
    }
  }

  // GPU pairs inside each node, against each other pass by pass and the floor.
  for (size_t n = 0; n < nn && n < d.gpu_pairs.size(); ++n) {
    if (d.gpus[n] < 2) continue;
    const auto floor = gpu_pair_floor(d, baseline, n);
    const PassJudgement j = judge_passes(d.gpu_pairs[n], floor, threshold_pct);
    for (std::string& r : gpu_pair_reasons(d.gpu_pairs[n], j, floor, threshold_pct,
                                           "sendrecv " + format_size(d.gpu_pair_size)))
      v.nodes[n].reasons.push_back(std::move(r));
    if (!j.compared) {
      v.nodes[n].unchecked.push_back("GPU pair sendrecv: " + std::to_string(d.gpus[n]) +
                                     " GPUs make fewer than 3 pairs to compare, and no floor for " +
                                     d.models[n]);
    }
  }

  // Inter-node pairs.
  std::vector<bool> slow(d.pairs.size(), false);
  std::vector<std::vector<std::string>> pair_reasons(d.pairs.size());
  for (size_t p = 0; p < d.pairs.size(); ++p)
    slow[p] = pair_checks(d, baseline, threshold_pct, p, pair_reasons[p]);

  // A node most of whose pairs are slow is the culprit, not its links.
  std::vector<bool> nic_bad(nn, false);
  for (size_t n = 0; n < nn; ++n) {
    int total = 0, bad = 0;
    std::vector<double> own;
    for (size_t p = 0; p < d.pairs.size(); ++p) {
      const auto& np = d.pairs[p].nodes;
      if (np.first != static_cast<int>(n) && np.second != static_cast<int>(n)) continue;
      ++total;
      if (slow[p]) ++bad;
      if (!d.pairs[p].busbw.empty()) own.push_back(d.pairs[p].busbw.back());
    }
    if (total >= 2 && 2 * bad > total) {
      nic_bad[n] = true;
      v.nodes[n].reasons.push_back(
          "inter-node: " + std::to_string(bad) + " of " + std::to_string(total) +
          " node pairs slow (median " + format_gbps(median_of(own)) + " at " +
          format_size(d.sizes.back()) + "): this node's NIC, cable or switch port");
    }
  }
  for (size_t p = 0; p < d.pairs.size(); ++p) {
    if (!slow[p]) continue;
    const auto& np = d.pairs[p].nodes;
    const bool explained =
        nic_bad[static_cast<size_t>(np.first)] || nic_bad[static_cast<size_t>(np.second)];
    v.links[p].status = explained ? LinkStatus::kAttributed : LinkStatus::kFail;
    v.links[p].reasons = pair_reasons[p];
    if (explained) {
      v.links[p].reasons.push_back(
          "attributed to node " +
          d.nodes[static_cast<size_t>(nic_bad[static_cast<size_t>(np.first)] ? np.first
                                                                             : np.second)]);
    }
  }

  // Global all_reduce: a fleet-level floor only.
  for (size_t s = 0; s < d.global.size() && s < ns; ++s) {
    const auto floor = floor_of(d.models.empty() ? "" : d.models[0], kTestGlobal, d.sizes[s]);
    if (floor && !std::isnan(d.global[s]) && d.global[s] < *floor) {
      v.fleet_reasons.push_back("global all_reduce " + format_size(d.sizes[s]) + ": " +
                                format_gbps(d.global[s]) + " below the baseline " +
                                format_gbps(*floor));
    }
  }

  for (NodeVerdict& n : v.nodes) n.pass = n.reasons.empty();
  v.pass = v.fleet_reasons.empty();
  for (const NodeVerdict& n : v.nodes) v.pass = v.pass && n.pass;
  for (const LinkVerdict& l : v.links) v.pass = v.pass && l.status != LinkStatus::kFail;
  return v;
}

}  // namespace ringside::bench
