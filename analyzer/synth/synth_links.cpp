#include "synth/synth_links.h"

#include <algorithm>

namespace ringside::analysis::synth {
namespace {

constexpr int64_t kFlushNs = 1'000'000'000;  // the probe's flush interval
constexpr uint64_t kOneChannelBytes = 64 << 10;
constexpr uint64_t kStepBytes = 512 << 10;
constexpr uint64_t kMaxSteps = 8;

// What the plugin's rows carry as NCCL's communicator hash: any value the
// communicator alone has (the analyzer places a hash by its members).
uint64_t comm_hash(const SynthComm& c) {
  return c.id * 0x9e3779b97f4a7c15ull + 1;
}

}  // namespace

LinkRows::LinkRows(const SynthModel& model, int lo, int hi)
    : model_(model), lo_(lo), hi_(hi), ranks_(static_cast<size_t>(hi - lo)) {
  for (int r = lo; r < hi; ++r) ranks_[static_cast<size_t>(r - lo)].window_end = -1;
}

void LinkRows::ring(const RingTransfer& t) {
  const SynthComm& c = model_.comms()[static_cast<size_t>(t.comm)];
  const int n = static_cast<int>(c.members.size());
  const int64_t end = t.start_ns + t.window_ns;
  for (int i = 0; i < n; ++i) {
    const int rank = c.members[static_cast<size_t>(i)];
    if (rank < lo_ || rank >= hi_) continue;
    const int next = (i + 1) % n, prev = (i + n - 1) % n;
    const int node = model_.node_of(rank);
    const int next_node = model_.node_of(c.members[static_cast<size_t>(next)]);
    if (next_node != node) {
      const double link = t.base_ns + t.per_factor_ns * model_.edge_factor(node, next_node);
      add(rank, t.comm, i, next, true, t.bus_bytes, t.window_ns,
          std::min(t.window_ns, static_cast<int64_t>(link)), end);
    }
    if (model_.node_of(c.members[static_cast<size_t>(prev)]) != node)
      add(rank, t.comm, i, prev, false, t.bus_bytes, t.window_ns, t.window_ns, end);
  }
}

void LinkRows::peer(const PeerTransfer& t) {
  const SynthComm& c = model_.comms()[static_cast<size_t>(t.comm)];
  auto comm_rank = [&](int rank) {
    return static_cast<int>(std::find(c.members.begin(), c.members.end(), rank) -
                            c.members.begin());
  };
  const int64_t end = t.start_ns + t.window_ns;
  const int src = comm_rank(t.src), dst = comm_rank(t.dst);
  if (t.src >= lo_ && t.src < hi_)
    add(t.src, t.comm, src, dst, true, t.bytes, t.window_ns, t.window_ns, end);
  if (t.dst >= lo_ && t.dst < hi_)
    add(t.dst, t.comm, dst, src, false, t.bytes, t.window_ns, t.window_ns, end);
}

void LinkRows::add(int rank, int comm, int comm_rank, int peer_comm_rank, bool send, uint64_t bytes,
                   int64_t window_ns, int64_t link_ns, int64_t end_ns) {
  Rank& r = ranks_[static_cast<size_t>(rank - lo_)];
  if (r.window_end < 0) {
    const int64_t start = model_.process_start_ns(rank);
    r.window_end = start + ((end_ns - start) / kFlushNs + 1) * kFlushNs;
  }
  while (end_ns >= r.window_end) close_window(rank, r);
  const SynthComm& c = model_.comms()[static_cast<size_t>(comm)];
  const uint64_t channels = bytes <= kOneChannelBytes ? 1 : 2;
  for (uint64_t ch = 0; ch < channels; ++ch) {
    const uint64_t ch_bytes = bytes / channels + (ch == 0 ? bytes % channels : 0);
    const uint64_t steps =
        std::clamp<uint64_t>((ch_bytes + kStepBytes - 1) / kStepBytes, 1, kMaxSteps);
    trace::LinkRecord& l = r.open[std::tuple(comm_hash(c), peer_comm_rank, static_cast<uint8_t>(ch),
                                             static_cast<uint8_t>(send))];
    l.comm_hash = comm_hash(c);
    l.nranks = static_cast<int32_t>(c.members.size());
    l.rank = comm_rank;
    l.n_nodes = static_cast<int32_t>(c.nodes.size());
    l.peer = peer_comm_rank;
    l.channel = static_cast<uint8_t>(ch);
    l.is_send = send ? 1 : 0;
    l.source = 0;  // the network proxy
    l.ops += 1;
    l.steps += steps;
    l.bytes += ch_bytes;
    l.active_ns += window_ns;
    l.net_ns += link_ns;
    if (send) {
      l.peer_wait_ns += window_ns - link_ns;
      const uint64_t step_bytes = ch_bytes / steps;
      const int64_t step_ns = link_ns / static_cast<int64_t>(steps);
      if (trace::faster_step(step_bytes, step_ns, l.best_step_bytes, l.best_step_ns)) {
        l.best_step_bytes = step_bytes;
        l.best_step_ns = step_ns;
      }
    }
  }
}

void LinkRows::close_window(int rank, Rank& r) {
  const int64_t t = r.window_end - model_.process_start_ns(rank);
  for (auto& [key, l] : r.open) {
    l.t_ns = t;
    r.closed.push_back(l);
  }
  r.open.clear();
  r.window_end += kFlushNs;
}

std::vector<trace::LinkRecord> LinkRows::take(int rank, int64_t end_true_ns) {
  Rank& r = ranks_[static_cast<size_t>(rank - lo_)];
  if (end_true_ns >= 0 && !r.open.empty()) {
    r.window_end = end_true_ns;  // the last flush writes what is open
    close_window(rank, r);
  }
  std::vector<trace::LinkRecord> out;
  out.swap(r.closed);
  return out;
}

std::vector<trace::LinkRecord> LinkRows::take_until(int rank, int64_t until_true_ns) {
  Rank& r = ranks_[static_cast<size_t>(rank - lo_)];
  const int64_t local = until_true_ns - model_.process_start_ns(rank);
  // Closed in order of their window's end.
  const auto later = std::find_if(r.closed.begin(), r.closed.end(),
                                  [&](const trace::LinkRecord& l) { return l.t_ns > local; });
  std::vector<trace::LinkRecord> out(r.closed.begin(), later);
  r.closed.erase(r.closed.begin(), later);
  return out;
}

}  // namespace ringside::analysis::synth
