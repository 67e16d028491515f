#include "link_table.h"

namespace ringside::probe {

void LinkCounters::add(const LinkCounters& o) {
  ops += o.ops;
  steps += o.steps;
  bytes += o.bytes;
  active_ns += o.active_ns;
  net_ns += o.net_ns;
  peer_wait_ns += o.peer_wait_ns;
  gpu_wait_ns += o.gpu_wait_ns;
  offer_step(o.best_step_bytes, o.best_step_ns);
}

void LinkCounters::offer_step(uint64_t step_bytes, int64_t step_ns) {
  if (!trace::faster_step(step_bytes, step_ns, best_step_bytes, best_step_ns)) return;
  best_step_bytes = step_bytes;
  best_step_ns = step_ns;
}

void PluginComm::merge(int32_t peer, uint8_t channel, bool is_send, const LinkCounters& c,
                       LinkSource source) {
  const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 16 |
                       static_cast<uint64_t>(channel) << 8 | static_cast<uint64_t>(source) << 1 |
                       (is_send ? 1u : 0u);
  std::lock_guard<std::mutex> lock(mu_);
  window_[key].add(c);
}

void PluginComm::drain(int64_t t_ns, std::vector<trace::LinkRecord>& out) {
  std::map<uint64_t, LinkCounters> window;
  {
    std::lock_guard<std::mutex> lock(mu_);
    window.swap(window_);
  }
  for (const auto& [key, c] : window) {
    trace::LinkRecord r{};
    r.t_ns = t_ns;
    r.comm_hash = comm_hash_;
    r.nranks = nranks_;
    r.rank = rank_;
    r.n_nodes = n_nodes_;
    r.peer = static_cast<int32_t>(key >> 16);
    r.channel = static_cast<uint8_t>(key >> 8);
    r.is_send = static_cast<uint8_t>(key & 1);
    r.source = static_cast<uint8_t>((key >> 1) & 1);
    r.ops = c.ops;
    r.steps = c.steps;
    r.bytes = c.bytes;
    r.active_ns = c.active_ns;
    r.net_ns = c.net_ns;
    r.peer_wait_ns = c.peer_wait_ns;
    r.gpu_wait_ns = c.gpu_wait_ns;
    r.best_step_bytes = c.best_step_bytes;
    r.best_step_ns = c.best_step_ns;
    out.push_back(r);
  }
}

PluginComm* LinkTable::add(uint64_t comm_hash, int nranks, int rank, int n_nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  comms_.push_back(std::make_unique<PluginComm>(comm_hash, nranks, rank, n_nodes));
  return comms_.back().get();
}

void LinkTable::drain(int64_t t_ns, std::vector<trace::LinkRecord>& out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& c : comms_) c->drain(t_ns, out);
}

LinkTable& link_table() {
  // Never destroyed: NCCL's proxy threads may still deliver events during exit.
  static auto* table = new LinkTable();
  return *table;
}

}  // namespace ringside::probe
