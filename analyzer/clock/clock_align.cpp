#include "clock/clock_align.h"

#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace ringside::analysis {
namespace {

struct Equation {
  int a, b;       // node indices: o_a - o_b = d
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

  // Ranks of a host share its clock: two ranks of one node that end a collective
  // apart (a ring's last step, a busy host) are not a clock difference, so only
  // members on different nodes are compared.  Per pair of nodes, the median over
  // (rank, comm) of their median differences is one equation, so one rank that
  // ends apart from its node's others cannot move the node.
  std::map<std::pair<int, int>, std::pair<std::vector<double>, double>> by_pair;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file) continue;
    std::unordered_map<int, std::vector<double>> diffs;  // comm index -> differences
    for (const auto& s : ri.clock_samples) {
      const CommInfo* c = set.comm(s.comm_id);
      if (c == nullptr || c->present < 2) continue;
      int64_t ref = ref_of[static_cast<size_t>(c->index)];
      if (ref < 0 || set.ranks[static_cast<size_t>(ref)].node_index == ri.node_index) continue;
      const auto& ends = ref_ends[ref];
      auto it = ends.find(key(s.comm_id, s.seq));
      if (it == ends.end()) continue;
      diffs[c->index].push_back(static_cast<double>(s.end_ns + ri.shift_ns - it->second));
    }
    for (auto& [ci, v] : diffs) {
      if (v.size() < 3) continue;
      const int a = ri.node_index;
      const int b = set.ranks[static_cast<size_t>(ref_of[static_cast<size_t>(ci)])].node_index;
      auto& [ds, samples] = by_pair[std::minmax(a, b)];
      ds.push_back(a < b ? median(v) : -median(v));
      samples += static_cast<double>(v.size());
    }
  }
  std::vector<Equation> eqs;
  for (auto& [nodes, p] : by_pair)
    eqs.push_back({nodes.first, nodes.second, median(p.first), p.second});
  out.equations = static_cast<int>(eqs.size());
  const int n = static_cast<int>(set.nodes.size());
  int anchor = -1;  // the node of the first rank with a trace is the zero
  for (const auto& ri : set.ranks) {
    if (ri.has_file) {
      anchor = ri.node_index;
      break;
    }
  }
  if (anchor < 0) return out;
  out.reference_node = set.nodes[static_cast<size_t>(anchor)];

  // Nodes that share a collective with the anchor's node, directly or through others:
  // the offsets of the rest cannot be told and stay 0.
  std::vector<char> linked(static_cast<size_t>(n), 0);
  linked[static_cast<size_t>(anchor)] = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& q : eqs) {
      const auto a = static_cast<size_t>(q.a), b = static_cast<size_t>(q.b);
      if (linked[a] != linked[b]) {
        linked[a] = linked[b] = 1;
        grew = true;
      }
    }
  }

  std::vector<double> offset(static_cast<size_t>(n), 0.0);
  std::vector<double> robust(eqs.size(), 1.0);
  for (int iteration = 0; iteration < 4 && !eqs.empty(); ++iteration) {
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
    // A tiny ridge fixes the gauge of every connected component (offsets are
    // relative); the anchor is pinned harder so it is the zero.
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

  for (size_t ni = 0; ni < set.nodes.size(); ++ni) {
    if (!linked[ni]) {
      offset[ni] = 0;
      out.unaligned_nodes.push_back(set.nodes[ni]);
      continue;
    }
    NodeOffset no;
    no.node = set.nodes[ni];
    no.ranks = static_cast<int>(set.node_ranks[ni].size());
    no.offset_ms = (offset[ni] - offset[static_cast<size_t>(anchor)]) / 1e6;
    out.max_abs_offset_ms = std::max(out.max_abs_offset_ms, std::abs(no.offset_ms));
    out.nodes.push_back(no);
  }
  for (auto& ri : set.ranks) {
    if (!ri.has_file) continue;
    const auto ni = static_cast<size_t>(ri.node_index);
    ri.offset_ns = static_cast<int64_t>(offset[ni] - offset[static_cast<size_t>(anchor)]);
  }
  out.aligned = !eqs.empty();
  return out;
}

}  // namespace ringside::analysis
