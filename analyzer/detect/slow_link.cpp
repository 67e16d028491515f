// Slow links.  With NCCL's profiler plugin events (match/link_matrix.h) every
// directed inter-node rank link has its own bandwidth while transmitting, and
// those are the inter-node observations; the kernel channels of send/recv tasks
// give intra-node GPU pairs theirs.  Without them, transfer time (end minus
// last arrival) is turned into bus bandwidth (nccl-tests factors) and compared
// with peers of the same class (same op and size for collectives; send/recv
// pairs; intra- vs inter-node kept apart).
// Inter-node slowness is localized by which explanation predicts exactly the
// slow observations: one node's NIC (every path through it is slow) or one
// node pair (only paths joining both ends are slow).
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "detect/context.h"
#include "report/format.h"
#include "report/next_command.h"

namespace ringside::analysis {
namespace {

// Transfers a path needs before its median bandwidth is trusted: short jobs (and
// jobs that hang after a few steps) time too few to tell a path from its noise.
constexpr uint64_t kMinTransfers = 8;

struct Observation {
  std::string what;  // "all_reduce 32 MiB on split 0x.. " / "send/recv rank 3 <-> 11"
  std::set<int> nodes;
  std::vector<int64_t> ranks;
  bool intra = false;
  double busbw = 0;
  // Its fastest transfer's bandwidth (the profiler plugin's: its best step).  A busy host, a
  // shared bus or ops queued behind each other add time to some transfers, by more or less
  // each time, and never take any away; a slow link limits every transfer, the fastest too.
  double fast = 0;
  double ref = 0;
  double transfer_s = 0;
  uint64_t count = 0;
  double p2p_bytes = 0;  // send/recv: bytes over `count` transfers; 0 for collectives
  bool slow = false;
  bool plugin = false;  // from the profiler plugin's per-peer counters
};

// A path's fastest timed transfer (Observation::fast), GB/s.
double fast_bandwidth(const std::vector<float>& busbw) {
  return busbw.empty() ? 0 : static_cast<double>(*std::max_element(busbw.begin(), busbw.end()));
}

std::string size_text(int log2) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = std::min(3, log2 / 10);
  return std::to_string(1ull << (log2 - 10 * u)) + " " + units[u];
}

// Whether `o` is slow against `ref`, its class's typical bus bandwidth (GB/s): even its
// fastest transfer below `ratio` of it (a busy host, a shared bus, other traffic or ops
// queued behind each other add time to some transfers, by more or less each time, and
// never take any away; a slow link limits every transfer, the fastest too).  A send/recv
// pair timed across two traces carries their clock alignment error: it must also lose
// `min_extra_ns` per transfer (the plugin's times are one process's own clock).
bool slow_against(const Observation& o, double ref, double ratio, double min_extra_ns) {
  if (o.fast >= ratio * ref) return false;
  if (o.p2p_bytes <= 0 || o.plugin || o.busbw <= 0 || ref <= 0) return true;
  // Bandwidth in GB/s is bytes per ns.
  const double per_op = o.p2p_bytes / static_cast<double>(o.count);
  return per_op / o.busbw - per_op / ref >= min_extra_ns;
}

// "its fastest transfer reached X GB/s" for an op-timed path (what made it slow); empty
// for the plugin's, whose bandwidth is already its best step.
std::string fastest_text(const Observation& o) {
  return o.plugin ? "" : "its fastest transfer reached " + fmt("%.2g", o.fast) + " GB/s";
}

void mark_slow(std::vector<Observation*>& cls, double ratio, double min_extra_ns) {
  if (cls.size() < 2) return;
  std::vector<double> v;
  for (auto* o : cls) v.push_back(o->busbw);
  // What the job's paths of this class typically reach: the median, which a minority
  // of slow paths cannot move (a high percentile is one fast outlier, and on a job
  // whose few paths are all slow it is itself slow, so nothing is ever below it).  A path
  // whose transfers are typically slower but now and then as fast as the others' is
  // delayed by what it shares, not limited by its link (slow_against).
  const double ref = median_of(v);
  for (auto* o : cls) {
    o->ref = ref;
    o->slow = slow_against(*o, ref, ratio, min_extra_ns);
  }
}

}  // namespace

bool send_recv_pairs_timed(const Context& ctx) {
  for (const auto& p : ctx.groups.p2p()) {
    if (p.count >= kMinTransfers && !p.busbw.empty() && p.src >= 0 && p.dst >= 0 &&
        p.bytes / static_cast<double>(p.count) >= static_cast<double>(ctx.th.slow_link_min_bytes))
      return true;
  }
  return false;
}

void detect_slow_links(const Context& ctx, std::vector<Finding>& out,
                       std::vector<Finding>& below_cost) {
  const TraceSet& set = ctx.set;
  std::vector<Observation> obs;
  // NCCL's own per-peer view (profiler plugin): one observation per directed rank
  // link, its bandwidth while transmitting.  Where it saw the network, it replaces
  // what op timing can only guess at (a ring's ops all end together, and grouped
  // ops share one device interval).
  bool plugin_inter = false, plugin_intra = false;
  if (ctx.links != nullptr) {
    for (const RankLink& l : ctx.links->rank_links) {
      if (l.gbps <= 0 || l.ops < kMinTransfers ||
          l.bytes / static_cast<double>(l.ops) < static_cast<double>(ctx.th.slow_link_min_bytes))
        continue;
      Observation o;
      o.intra = l.src_node == l.dst_node;
      if (o.intra) {
        o.what = "the path " + ctx.describe_rank(l.src) + " -> " + ctx.describe_rank(l.dst);
      } else {
        o.what = "rank " + std::to_string(l.src) + " -> " + std::to_string(l.dst) + " (" +
                 set.nodes[static_cast<size_t>(l.src_node)] + " -> " +
                 set.nodes[static_cast<size_t>(l.dst_node)] + ")";
      }
      o.nodes = {l.src_node, l.dst_node};
      o.ranks = {l.src, l.dst};
      // Its fastest steps: a busy host or steps queued behind each other only add
      // time, the same for every link, which would shrink the contrast of a mean.
      o.busbw = l.best_gbps > 0 ? l.best_gbps : l.gbps;
      o.fast = o.busbw;
      o.transfer_s = l.net_s;
      o.count = l.ops;
      o.p2p_bytes = static_cast<double>(l.bytes);
      o.plugin = true;
      plugin_inter = plugin_inter || !o.intra;
      plugin_intra = plugin_intra || o.intra;
      obs.push_back(std::move(o));
    }
  }
  for (const auto& l : ctx.groups.comm_links()) {
    if (l.count < kMinTransfers || (1ull << l.size_log2) < ctx.th.slow_link_min_bytes) continue;
    const CommInfo& c = set.comms[static_cast<size_t>(l.comm)];
    if (plugin_inter && !c.intra_node) continue;
    Observation o;
    o.what = std::string(trace::op_kind_name(static_cast<trace::OpKind>(l.op))) + " of ~" +
             size_text(l.size_log2) + " on " + c.label;
    o.nodes.insert(c.nodes.begin(), c.nodes.end());
    for (int64_t m : c.members)
      if (m >= 0) o.ranks.push_back(m);
    o.intra = c.intra_node;
    o.busbw = median_of(l.busbw);
    o.fast = fast_bandwidth(l.busbw);
    o.transfer_s = l.transfer_ns / 1e9;
    o.count = l.count;
    obs.push_back(std::move(o));
  }
  const size_t first_p2p = obs.size();  // plugin and collective observations come first
  // Send/recv, one observation per rank pair: a pair is as fast as its faster direction, so
  // that a link is called slow only when both directions are (one-way timing effects, such
  // as a receiver that posts late in one direction of a pipeline, are not the link).
  std::map<std::pair<int64_t, int64_t>, Observation> pairs;
  for (const auto& p : ctx.groups.p2p()) {
    if (p.count < kMinTransfers || p.busbw.empty() || p.src < 0 || p.dst < 0) continue;
    if (p.bytes / static_cast<double>(p.count) < static_cast<double>(ctx.th.slow_link_min_bytes))
      continue;
    const RankInfo& a = set.ranks[static_cast<size_t>(p.src)];
    const RankInfo& b = set.ranks[static_cast<size_t>(p.dst)];
    // Where NCCL timed the paths themselves, grouped ops that share one device
    // interval say nothing more about them.
    if ((plugin_inter && a.node_index != b.node_index) ||
        (plugin_intra && a.node_index == b.node_index))
      continue;
    const auto key = std::minmax(p.src, p.dst);
    const bool seen = pairs.count(key) != 0;
    Observation& o = pairs[key];
    o.what =
        "send/recv rank " + (seen ? std::to_string(key.first) + " <-> " + std::to_string(key.second)
                                  : std::to_string(p.src) + " -> " + std::to_string(p.dst));
    o.nodes = {a.node_index, b.node_index};
    o.ranks = {key.first, key.second};
    o.intra = a.node_index == b.node_index;
    o.busbw = std::max(o.busbw, median_of(p.busbw));
    o.fast = std::max(o.fast, fast_bandwidth(p.busbw));
    o.transfer_s += p.transfer_ns / 1e9;
    o.p2p_bytes += p.bytes;
    o.count += p.count;
  }
  for (auto& [key, o] : pairs) obs.push_back(std::move(o));
  // Classes of comparable observations.
  std::map<std::string, std::vector<Observation*>> classes;
  for (size_t i = 0; i < obs.size(); ++i) {
    Observation& o = obs[i];
    std::string key = (o.plugin        ? std::string("net")
                       : i < first_p2p ? o.what.substr(0, o.what.find(" on ")) + "/" +
                                             std::to_string(o.ranks.size())
                                       : std::string("p2p")) +
                      (o.intra ? "/intra" : "/inter");
    classes[key].push_back(&o);
  }
  // Intra-node classes: each path against the median of its class.
  for (auto& [k, cls] : classes) {
    if (!cls.empty() && cls.front()->intra)
      mark_slow(cls, ctx.th.slow_link_ratio, ctx.th.slow_link_min_extra_ns);
  }

  const double job = ctx.job_seconds();
  // Inter-node: each explanation (one node's NIC, one node pair) is tested against the
  // paths it does not involve: they are its reference (median per class), so a reference
  // can never be made of the paths under suspicion, however many they are.  The
  // explanation that predicts the most slow paths with the fewest errors wins.
  struct Candidate {
    int a = -1, b = -1;  // b < 0: NIC of a
    int slow = 0, errors = 0;
    double cost = 0, slow_bw = 0, ref = 0;
    bool plugin = false;  // observed by NCCL's profiler plugin
    std::vector<std::string> examples;
    std::set<int64_t> ranks;
  };
  auto involves = [](const Observation& o, int a, int b) {
    return o.nodes.count(a) != 0 && (b < 0 || o.nodes.count(b) != 0);
  };
  auto evaluate = [&](int a, int b) {
    Candidate c;
    c.a = a;
    c.b = b;
    for (auto& [k, cls] : classes) {
      if (cls.empty() || cls.front()->intra) continue;
      std::vector<double> out_bw;
      for (const Observation* o : cls) {
        if (!involves(*o, a, b)) out_bw.push_back(o->busbw);
      }
      if (out_bw.empty() || out_bw.size() == cls.size()) continue;  // untestable here
      const double ref = median_of(out_bw);
      for (const Observation* o : cls) {
        // As inside a node (mark_slow).
        const bool slow =
            slow_against(*o, ref, ctx.th.slow_link_ratio, ctx.th.slow_link_min_extra_ns);
        if (!involves(*o, a, b)) {
          c.errors += slow;  // a path the explanation says is fine, slow anyway
          continue;
        }
        if (!slow) {
          ++c.errors;
          continue;
        }
        ++c.slow;
        // A ring's (or an alltoall's) links transmit at the same time: what the slow
        // ones cost the job is the slowest one's excess, not their sum.
        const double excess = o->transfer_s * (1 - o->busbw / ref);
        c.cost = o->plugin ? std::max(c.cost, excess) : c.cost + excess;
        c.plugin = c.plugin || o->plugin;
        c.slow_bw += o->busbw;
        c.ref += ref;
        if (c.examples.size() < 2) {
          const std::string fastest = fastest_text(*o);
          c.examples.push_back(o->what + " " + fmt("%.1f", o->busbw) + " GB/s vs " +
                               fmt("%.1f", ref) + " GB/s" +
                               (fastest.empty() ? "" : " (" + fastest + ")"));
        }
        for (int64_t r : o->ranks) {
          const int ni = set.ranks[static_cast<size_t>(r)].node_index;
          if (ni == a || (b >= 0 && ni == b)) c.ranks.insert(r);
        }
      }
    }
    return c;
  };
  // The explanation must fit better than it fails: when as many observations are
  // mispredicted as are slow, the slow ones are scheduling noise or one pair's own
  // trouble, which node-level data cannot place.  The first that fits best is picked;
  // candidates are weighed as they are evaluated, not held (N nodes make N(N+1)/2 of
  // them: two million on 2048 nodes).
  std::optional<Candidate> pick, pair_alike;  // the first node pair that fits as well
  int alike = 0;                              // others that fit as well as the pick
  auto weigh = [&](Candidate c) {
    const int fit = c.slow - c.errors;
    if (fit <= 0) return;
    if (!pick || fit > pick->slow - pick->errors) {
      pick = std::move(c);
      pair_alike.reset();
      alike = 0;
    } else if (fit == pick->slow - pick->errors) {
      ++alike;
      if (c.b >= 0 && !pair_alike) pair_alike = std::move(c);
    }
  };
  // A node pair no inter-node observation joins predicts no slow path (it cannot fit):
  // only the pairs some observation joins are evaluated, in the same order.
  std::set<std::pair<int, int>> joined;
  for (const auto& [k, cls] : classes) {
    if (cls.empty() || cls.front()->intra) continue;
    for (const Observation* o : cls) {
      for (auto i = o->nodes.begin(); i != o->nodes.end(); ++i) {
        for (auto j = std::next(i); j != o->nodes.end(); ++j) joined.emplace(*i, *j);
      }
    }
  }
  const int nn = static_cast<int>(set.nodes.size());
  auto next_pair = joined.begin();
  for (int a = 0; a < nn; ++a) {
    weigh(evaluate(a, -1));
    while (next_pair != joined.end() && next_pair->first < a) ++next_pair;
    for (; next_pair != joined.end() && next_pair->first == a; ++next_pair)
      weigh(evaluate(a, next_pair->second));
  }
  if (pick) {
    // A NIC and a pair explain equally when the node was seen with one peer only.
    const bool ambiguous = alike > 0;
    if (pick->b < 0 && pair_alike) pick = std::move(pair_alike);
    Finding f;
    f.kind = "slow_link";
    f.cost_s = pick->cost;
    f.ranks.assign(pick->ranks.begin(), pick->ranks.end());
    const std::string na = set.nodes[static_cast<size_t>(pick->a)];
    std::string ex;
    for (const auto& e : pick->examples) ex += (ex.empty() ? "" : "; ") + e;
    const double pct = 100 * pick->slow_bw / pick->ref;
    const std::string measure =
        pick->plugin ? "the bandwidth NCCL's network proxy measured on" : "the bus bandwidth of";
    if (pick->b < 0) {
      f.subkind = "nic";
      f.nodes = {na};
      f.evidence = "Every inter-node path through " + na + " is slow (" +
                   std::to_string(pick->slow) + " observations at " + fmt("%.0f", pct) + "% of " +
                   measure + " comparable paths between other nodes): " + na +
                   "'s network interface. " + ex + ".";
    } else {
      const std::string nb = set.nodes[static_cast<size_t>(pick->b)];
      f.subkind = "node_pair";
      f.nodes = {na, nb};
      f.evidence = "Transfers between " + na + " and " + nb + " run at " + fmt("%.0f", pct) +
                   "% of " + measure +
                   " comparable paths while both nodes are normal with "
                   "other nodes: the path between them. " +
                   ex + "." +
                   (ambiguous ? " (A NIC problem on one end cannot be excluded: each end was "
                                "seen only with the other.)"
                              : "");
    }
    f.extra["intra_node"] = false;
    f.extra["bus_bw_gbps"] = pick->slow_bw / pick->slow;
    f.extra["peer_bus_bw_gbps"] = pick->ref / pick->slow;
    f.extra["unexplained_observations"] = pick->errors;
    f.severity = std::clamp(f.cost_s / std::max(job, 1e-9) * 2, 0.05, 1.0);
    f.confidence = pick->errors == 0 ? (ambiguous ? 0.6 : 0.85) : 0.4;
    f.next_command = next_command_for_link(ctx, f.nodes);
    (f.cost_s >= ctx.th.min_cost_fraction * job ? out : below_cost).push_back(std::move(f));
  }
  // Intra-node: slow GPU-GPU paths, one finding per node.
  std::map<int, std::vector<const Observation*>> intra_slow;
  for (const auto& o : obs) {
    if (o.intra && o.slow && !o.nodes.empty()) intra_slow[*o.nodes.begin()].push_back(&o);
  }
  for (const auto& [node, list] : intra_slow) {
    Finding f;
    f.kind = "slow_link";
    f.subkind = "intra_node";
    f.nodes = {set.nodes[static_cast<size_t>(node)]};
    std::set<int64_t> ranks;
    double cost = 0;
    for (auto* o : list) {
      cost += o->transfer_s * (1 - o->busbw / o->ref);
      ranks.insert(o->ranks.begin(), o->ranks.end());
    }
    f.ranks.assign(ranks.begin(), ranks.end());
    f.cost_s = cost;
    const Observation& first = *list.front();
    const std::string fastest = fastest_text(first);
    f.evidence = "Inside " + f.nodes[0] + ", " + first.what + " reaches " +
                 fmt("%.1f", first.busbw) + " GB/s vs " + fmt("%.1f", first.ref) +
                 " GB/s, the median of comparable " +
                 (first.plugin ? "GPU-to-GPU paths" : "groups") + " (NVLink/PCIe)" +
                 (fastest.empty() ? "" : "; " + fastest) + ".";
    f.extra["intra_node"] = true;
    f.severity = std::clamp(cost / std::max(job, 1e-9) * 2, 0.05, 1.0);
    f.confidence = 0.6;
    // A GPU pair timed by NCCL itself: test exactly those two devices.
    const RankInfo& a = set.ranks[static_cast<size_t>(first.ranks.front())];
    const RankInfo& b = set.ranks[static_cast<size_t>(first.ranks.back())];
    f.next_command = first.plugin && a.gpu_device >= 0 && b.gpu_device >= 0
                         ? next_command_for_gpu_pair(f.nodes[0], a.gpu_device, b.gpu_device)
                         : next_command_for_link(ctx, {f.nodes[0]});
    (cost >= ctx.th.min_cost_fraction * job ? out : below_cost).push_back(std::move(f));
  }
}

}  // namespace ringside::analysis
