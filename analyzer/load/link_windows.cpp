#include "load/link_windows.h"

#include <algorithm>
#include <limits>

namespace ringside::analysis {

void LinkWindowSums::Bests::offer(uint64_t bytes, int64_t ns) {
  if (seen++ % stride != 0) return;
  kept.emplace_back(bytes, ns);
  if (kept.size() < kKeptBests) return;
  // Full: keep the windows numbered by a multiple of twice the stride.
  for (size_t i = 0; 2 * i < kept.size(); ++i) kept[i] = kept[2 * i];
  kept.resize((kept.size() + 1) / 2);
  stride *= 2;
}

void LinkWindowSums::add(std::span<const trace::LinkRecord> rows) {
  // Each row is range-checked, their sum is not: saturate instead of overflowing.
  auto add_ns = [](int64_t& a, int64_t b) {
    a = b > std::numeric_limits<int64_t>::max() - a ? std::numeric_limits<int64_t>::max() : a + b;
  };
  for (const trace::LinkRecord& l : rows) {
    ++rows_;
    auto [it, fresh] = where_.emplace(
        Key(l.comm_hash, l.nranks, l.rank, l.peer, l.channel, l.is_send, l.source), sums_.size());
    if (fresh) bests_.emplace_back();
    if (trace::best_step_candidate(l.best_step_bytes, l.best_step_ns))
      bests_[it->second].offer(l.best_step_bytes, l.best_step_ns);
    if (fresh) {
      sums_.push_back(l);
      continue;
    }
    trace::LinkRecord& t = sums_[it->second];
    t.t_ns = std::max(t.t_ns, l.t_ns);
    t.n_nodes = std::max(t.n_nodes, l.n_nodes);
    t.ops += l.ops;
    t.steps += l.steps;
    t.bytes += l.bytes;
    add_ns(t.active_ns, l.active_ns);
    add_ns(t.net_ns, l.net_ns);
    add_ns(t.peer_wait_ns, l.peer_wait_ns);
    add_ns(t.gpu_wait_ns, l.gpu_wait_ns);
  }
}

size_t LinkWindowSums::kept_bests() const {
  size_t n = 0;
  for (const Bests& b : bests_) n += b.kept.size();
  return n;
}

std::vector<trace::LinkRecord> LinkWindowSums::summed() const {
  std::vector<trace::LinkRecord> out = sums_;
  auto faster = [](const std::pair<uint64_t, int64_t>& x, const std::pair<uint64_t, int64_t>& y) {
    return trace::faster_step(x.first, x.second, y.first, y.second);
  };
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].best_step_bytes = 0;
    out[i].best_step_ns = 0;
    if (bests_[i].kept.empty()) continue;
    auto b = bests_[i].kept;
    auto mid = b.begin() + static_cast<long>(b.size() / 2);
    std::nth_element(b.begin(), mid, b.end(), faster);
    out[i].best_step_bytes = mid->first;
    out[i].best_step_ns = mid->second;
  }
  return out;
}

std::vector<trace::LinkRecord> sum_link_windows(std::span<const trace::LinkRecord> rows) {
  LinkWindowSums sums;
  sums.add(rows);
  return sums.summed();
}

}  // namespace ringside::analysis
