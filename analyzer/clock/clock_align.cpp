#include "clock/clock_align.h"

#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace ringside::analysis {
namespace {

struct Equation {
  int64_t a, b;   // o_a - o_b = d
  double d;       // ns
  double weight;  // number of samples behind the median
};

double median(std::vector<double>& v) {
  auto mid = v.begin() + static_cast<long>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

uint64_t key(uint64_t comm, uint64_t seq) {
  return comm * 0x9e3779b97f4a7c15ull ^ seq;
}

}  // namespace

ClockAlignment align_clocks(TraceSet& set) {
  ClockAlignment out;
  // Reference end times of each comm's lowest-ranked member with a trace.
  std::vector<int64_t> ref_of(set.comms.size(), -1);
  for (const auto& c : set.comms) {
    for (int64_t g : c.members) {
      if (g >= 0 && set.ranks[static_cast<size_t>(g)].has_file) {
        if (ref_of[static_cast<size_t>(c.index)] < 0 || g < ref_of[static_cast<size_t>(c.index)]) {
          ref_of[static_cast<size_t>(c.index)] = g;
        }
      }
    }
  }
  std::unordered_map<int64_t, std::unordered_map<uint64_t, int64_t>> ref_ends;
  for (size_t ci = 0; ci < set.comms.size(); ++ci) {
    int64_t ref = ref_of[ci];
    if (ref >= 0) ref_ends[ref];
  }
  for (auto& [ref, ends] : ref_ends) {
    const RankInfo& ri = set.ranks[static_cast<size_t>(ref)];
    for (const auto& s : ri.clock_samples) ends[key(s.comm_id, s.seq)] = s.end_ns + ri.shift_ns;
  }

  std::vector<Equation> eqs;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file) continue;
    std::unordered_map<int, std::vector<double>> diffs;  // comm index -> differences
    for (const auto& s : ri.clock_samples) {
      const CommInfo* c = set.comm(s.comm_id);
      if (c == nullptr || c->present < 2) continue;
      int64_t ref = ref_of[static_cast<size_t>(c->index)];
      if (ref < 0 || ref == ri.rank) continue;
      const auto& ends = ref_ends[ref];
      auto it = ends.find(key(s.comm_id, s.seq));
      if (it == ends.end()) continue;
      diffs[c->index].push_back(static_cast<double>(s.end_ns + ri.shift_ns - it->second));
    }
    for (auto& [ci, v] : diffs) {
      if (v.size() < 3) continue;
      eqs.push_back(
          {ri.rank, ref_of[static_cast<size_t>(ci)], median(v), static_cast<double>(v.size())});
    }
  }
  out.equations = static_cast<int>(eqs.size());
  if (eqs.empty()) return out;

  const int n = static_cast<int>(set.world_size);
  std::vector<double> offset(static_cast<size_t>(n), 0.0);
  std::vector<double> robust(eqs.size(), 1.0);
  // A tiny ridge fixes the gauge of every connected component (offsets are
  // relative); the first rank with a trace is pinned harder so it is the zero.
  int64_t anchor = -1;
  for (const auto& ri : set.ranks) {
    if (ri.has_file) {
      anchor = ri.rank;
      break;
    }
  }
  for (int iteration = 0; iteration < 4; ++iteration) {
    std::vector<Eigen::Triplet<double>> trips;
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(n);
    for (size_t e = 0; e < eqs.size(); ++e) {
      const auto& q = eqs[e];
      double w = std::sqrt(q.weight) * robust[e];
      int a = static_cast<int>(q.a), b = static_cast<int>(q.b);
      trips.emplace_back(a, a, w);
      trips.emplace_back(b, b, w);
      trips.emplace_back(a, b, -w);
      trips.emplace_back(b, a, -w);
      rhs[a] += w * q.d;
      rhs[b] -= w * q.d;
    }
    for (int i = 0; i < n; ++i) trips.emplace_back(i, i, i == anchor ? 1e3 : 1e-6);
    Eigen::SparseMatrix<double> normal(n, n);
    normal.setFromTriplets(trips.begin(), trips.end());
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> solver(normal);
    if (solver.info() != Eigen::Success) return out;
    Eigen::VectorXd x = solver.solve(rhs);
    for (int i = 0; i < n; ++i) offset[static_cast<size_t>(i)] = x[i];
    // Huber weights on the residuals: an equation from a bad comm or rank
    // cannot drag the others.
    std::vector<double> res(eqs.size());
    for (size_t e = 0; e < eqs.size(); ++e) {
      res[e] = std::abs(offset[static_cast<size_t>(eqs[e].a)] -
                        offset[static_cast<size_t>(eqs[e].b)] - eqs[e].d);
    }
    std::vector<double> tmp = res;
    double scale = std::max(1.4826 * median(tmp), 20'000.0);  // at least 20 us
    for (size_t e = 0; e < eqs.size(); ++e) {
      robust[e] = res[e] <= 1.5 * scale ? 1.0 : 1.5 * scale / res[e];
    }
  }

  // One clock per host: the node's offset is the median of its ranks'.
  double anchor_node_offset = 0;
  std::vector<double> node_offset(set.nodes.size(), 0.0);
  for (size_t ni = 0; ni < set.nodes.size(); ++ni) {
    std::vector<double> v;
    for (int64_t r : set.node_ranks[ni]) v.push_back(offset[static_cast<size_t>(r)]);
    if (v.empty()) continue;
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    node_offset[ni] = sorted[sorted.size() / 2];
    NodeOffset no;
    no.node = set.nodes[ni];
    no.ranks = static_cast<int>(v.size());
    no.spread_ms = (sorted.back() - sorted.front()) / 1e6;
    out.nodes.push_back(no);
  }
  if (anchor >= 0)
    anchor_node_offset =
        node_offset[static_cast<size_t>(set.ranks[static_cast<size_t>(anchor)].node_index)];
  for (size_t ni = 0; ni < out.nodes.size(); ++ni) {
    out.nodes[ni].offset_ms = (node_offset[ni] - anchor_node_offset) / 1e6;
    out.max_abs_offset_ms = std::max(out.max_abs_offset_ms, std::abs(out.nodes[ni].offset_ms));
  }
  for (auto& ri : set.ranks) {
    if (!ri.has_file) continue;
    ri.offset_ns =
        static_cast<int64_t>(node_offset[static_cast<size_t>(ri.node_index)] - anchor_node_offset);
  }
  out.aligned = true;
  return out;
}

}  // namespace ringside::analysis
