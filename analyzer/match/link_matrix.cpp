#include "match/link_matrix.h"

#include "load/trace_set.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace ringside::analysis {
namespace {

// NCCL's commHash is not the probe's comm id: a communicator of the plugin is the
// traced one that has every rank reporting it at the position it reports.
struct Holder {
  int64_t rank;
  int32_t comm_rank;
  int32_t nranks;
};

// The traced communicator holding all `holders` where they say, or -1 when none
// does or several that disagree on some member do.
int place(const TraceSet& set, const std::vector<Holder>& holders,
          const std::vector<std::vector<int>>& comms_of_rank) {
  int found = -1;
  const Holder& h0 = holders.front();
  for (int ci : comms_of_rank[static_cast<size_t>(h0.rank)]) {
    const CommInfo& c = set.comms[static_cast<size_t>(ci)];
    if (c.nranks != h0.nranks) continue;
    const bool fits = std::all_of(holders.begin(), holders.end(), [&](const Holder& h) {
      return h.nranks == c.nranks && static_cast<size_t>(h.comm_rank) < c.members.size() &&
             c.members[static_cast<size_t>(h.comm_rank)] == h.rank;
    });
    if (!fits) continue;
    if (found >= 0 && set.comms[static_cast<size_t>(found)].members != c.members) return -1;
    if (found < 0) found = ci;
  }
  return found;
}

struct Sums {
  struct Channel {
    uint64_t ops = 0;
    uint64_t bytes = 0;
    int64_t net_ns = 0;
    uint64_t best_bytes = 0;
    int64_t best_ns = 0;
  };
  std::map<uint8_t, Channel> channel;  // the sender's rows (best: either side's kernel rows)
  uint64_t bytes = 0;
  int64_t send_active = 0, peer_wait = 0, gpu_wait = 0;
  int64_t recv_active = 0, recv_net = 0;
};

double share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : -1;
}

RankLink finish(const TraceSet& set, int64_t src, int64_t dst, const Sums& s) {
  RankLink l;
  l.src = src;
  l.dst = dst;
  l.src_node = set.ranks[static_cast<size_t>(src)].node_index;
  l.dst_node = set.ranks[static_cast<size_t>(dst)].node_index;
  l.bytes = s.bytes;
  // Channels transmit in parallel: the link moves the sum of their rates.  Its best
  // is its fastest channel step, times the channels sharing the link.
  double best = 0;
  for (const auto& [ch, c] : s.channel) {
    l.ops = std::max(l.ops, c.ops);
    if (c.net_ns > 0) l.gbps += static_cast<double>(c.bytes) / static_cast<double>(c.net_ns);
    if (c.best_ns > 0)
      best = std::max(best, static_cast<double>(c.best_bytes) / static_cast<double>(c.best_ns));
  }
  l.best_gbps = best * static_cast<double>(s.channel.size());
  l.net_s = l.gbps > 0 ? static_cast<double>(l.bytes) / l.gbps / 1e9 : 0;
  l.peer_wait = share(s.peer_wait, s.send_active);
  l.gpu_wait = share(s.gpu_wait, s.send_active);
  l.recv_wait = share(s.recv_net, s.recv_active);
  return l;
}

}  // namespace

LinkMatrix build_link_matrix(const TraceSet& set) {
  LinkMatrix m;
  std::map<uint64_t, std::vector<Holder>> holders;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file || !ri.read_error.empty()) continue;
    std::set<uint64_t> seen;
    for (const trace::LinkRecord& l : ri.links) {
      if (seen.insert(l.comm_hash).second)
        holders[l.comm_hash].push_back({ri.rank, l.rank, l.nranks});
    }
  }
  if (holders.empty()) return m;
  std::vector<std::vector<int>> comms_of_rank(set.ranks.size());
  for (const CommInfo& c : set.comms) {
    for (int64_t g : c.members) {
      if (g >= 0 && static_cast<size_t>(g) < comms_of_rank.size())
        comms_of_rank[static_cast<size_t>(g)].push_back(c.index);
    }
  }
  std::map<uint64_t, int> placed;
  for (const auto& [hash, hs] : holders) {
    const int ci = place(set, hs, comms_of_rank);
    if (ci < 0) {
      ++m.unplaced_comms;
      continue;
    }
    placed[hash] = ci;
  }
  // (comm, src, dst) -> sums; a send row is the sender's view, a recv row the receiver's.
  std::map<std::tuple<int, int64_t, int64_t>, Sums> sums;
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file || !ri.read_error.empty()) continue;
    for (const trace::LinkRecord& l : ri.links) {
      auto it = placed.find(l.comm_hash);
      if (it == placed.end()) continue;
      const CommInfo& c = set.comms[static_cast<size_t>(it->second)];
      // Rows of one hash may disagree with the one that placed it (a damaged file).
      if (l.nranks != c.nranks || static_cast<size_t>(l.peer) >= c.members.size() ||
          static_cast<size_t>(l.rank) >= c.members.size() ||
          c.members[static_cast<size_t>(l.rank)] != ri.rank)
        continue;
      const int64_t peer = c.members[static_cast<size_t>(l.peer)];
      // A peer without a usable trace has no node: its links cannot be placed.
      if (peer < 0 || static_cast<size_t>(peer) >= set.ranks.size() ||
          set.ranks[static_cast<size_t>(peer)].node_index < 0 || ri.node_index < 0)
        continue;
      // Kernel channel rows time GPU-to-GPU paths inside a node; between nodes the
      // network proxy's rows say more (where the time went, not only how long).
      const bool kernel = l.source == 1;
      if (kernel && set.ranks[static_cast<size_t>(peer)].node_index != ri.node_index) continue;
      const int64_t src = l.is_send ? ri.rank : peer;
      const int64_t dst = l.is_send ? peer : ri.rank;
      Sums& s = sums[{it->second, src, dst}];
      if (!l.is_send && !kernel) {
        s.recv_active += l.active_ns;
        s.recv_net += l.net_ns;
        continue;
      }
      auto& ch = s.channel[l.channel];
      // The fastest step: a network sender's, or either side's kernel channel (which
      // also holds the wait for its peer, on whichever side came first).
      if (trace::faster_step(l.best_step_bytes, l.best_step_ns, ch.best_bytes, ch.best_ns)) {
        ch.best_bytes = l.best_step_bytes;
        ch.best_ns = l.best_step_ns;
      }
      if (l.is_send) {
        ch.ops += l.ops;
        ch.bytes += l.bytes;
        ch.net_ns += l.net_ns;
        s.bytes += l.bytes;
        if (!kernel) {
          s.send_active += l.active_ns;
          s.peer_wait += l.peer_wait_ns;
          s.gpu_wait += l.gpu_wait_ns;
        }
      }
    }
  }
  // Per communicator, then pooled over communicators: bytes over time transmitting.
  std::map<std::pair<int64_t, int64_t>, std::pair<RankLink, Sums>> pooled;
  std::map<int, size_t> comm_pos;
  for (const auto& [key, s] : sums) {
    const auto [ci, src, dst] = key;
    const RankLink l = finish(set, src, dst, s);
    auto [pos, fresh] = comm_pos.emplace(ci, m.per_comm.size());
    if (fresh) {
      const CommInfo& c = set.comms[static_cast<size_t>(ci)];
      m.per_comm.push_back({ci, c.id, c.label, {}});
    }
    m.per_comm[pos->second].links.push_back(l);
    auto& [pl, ps] = pooled[{src, dst}];
    pl.ops += l.ops;
    pl.bytes += l.bytes;
    pl.net_s += l.net_s;
    pl.best_gbps = std::max(pl.best_gbps, l.best_gbps);
    ps.send_active += s.send_active;
    ps.peer_wait += s.peer_wait;
    ps.gpu_wait += s.gpu_wait;
    ps.recv_active += s.recv_active;
    ps.recv_net += s.recv_net;
  }
  for (auto& [key, v] : pooled) {
    auto& [l, s] = v;
    l.src = key.first;
    l.dst = key.second;
    l.src_node = set.ranks[static_cast<size_t>(l.src)].node_index;
    l.dst_node = set.ranks[static_cast<size_t>(l.dst)].node_index;
    l.gbps = l.net_s > 0 ? static_cast<double>(l.bytes) / (l.net_s * 1e9) : 0;
    l.peer_wait = share(s.peer_wait, s.send_active);
    l.gpu_wait = share(s.gpu_wait, s.send_active);
    l.recv_wait = share(s.recv_net, s.recv_active);
    m.rank_links.push_back(l);
  }
  // Node to node: the median of the rank links between them.
  std::map<std::pair<int, int>, std::vector<const RankLink*>> by_nodes;
  for (const RankLink& l : m.rank_links) {
    if (l.gbps > 0) by_nodes[{l.src_node, l.dst_node}].push_back(&l);
  }
  for (const auto& [key, ls] : by_nodes) {
    NodeLink n;
    n.src_node = key.first;
    n.dst_node = key.second;
    n.links = static_cast<int>(ls.size());
    std::vector<double> bw, best;
    double wait = 0;
    int waits = 0;
    for (const RankLink* l : ls) {
      n.bytes += l->bytes;
      bw.push_back(l->gbps);
      if (l->best_gbps > 0) best.push_back(l->best_gbps);
      if (l->peer_wait >= 0) {
        wait += l->peer_wait;
        ++waits;
      }
    }
    std::sort(bw.begin(), bw.end());
    n.gbps = bw[bw.size() / 2];
    n.min_gbps = bw.front();
    if (!best.empty()) {
      std::sort(best.begin(), best.end());
      n.best_gbps = best[best.size() / 2];
    }
    n.peer_wait = waits > 0 ? wait / waits : -1;
    m.node_links.push_back(n);
  }
  return m;
}

}  // namespace ringside::analysis
