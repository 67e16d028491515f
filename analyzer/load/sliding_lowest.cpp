#include "load/sliding_lowest.h"

namespace ringside::analysis {

void SlidingLowest::push(Queue& q, uint64_t row, uint64_t value) {
  // A row whose number is not below this one's is never the lowest again while this
  // one is held: it leaves the window first.
  while (!q.empty() && q.back().value >= value) q.pop_back();
  q.push_back({row, value});
}

void SlidingLowest::append(uint64_t first, std::span<const trace::OpRecord> rows) {
  // Collectives of one communicator come in runs: its queue is looked up once a run.
  Queue* run = nullptr;
  uint64_t run_comm = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const trace::OpRecord& op = rows[i];
    const auto kind = static_cast<trace::OpKind>(op.op);
    if (trace::is_p2p(kind)) {
      push(p2p_[{op.comm_id, kind == trace::OpKind::kSend, op.peer}], first + i, op.peer_seq);
      continue;
    }
    if (run == nullptr || run_comm != op.comm_id) {
      run = &collectives_[op.comm_id];  // elements of an unordered_map stay where they are
      run_comm = op.comm_id;
    }
    push(*run, first + i, op.seq);
  }
}

void SlidingLowest::drop_before(uint64_t first) {
  auto drop = [&](auto& queues) {
    for (auto it = queues.begin(); it != queues.end();) {
      Queue& q = it->second;
      while (!q.empty() && q.front().row < first) q.pop_front();
      it = q.empty() ? queues.erase(it) : std::next(it);
    }
  };
  drop(collectives_);
  drop(p2p_);
}

void SlidingLowest::note(const std::unordered_map<uint64_t, int32_t>& me_in,
                         WindowFirsts& firsts) const {
  for (const auto& [comm_id, q] : collectives_) firsts.note_seq(comm_id, q.front().value);
  for (const auto& [key, q] : p2p_) {
    const auto& [comm_id, send, peer] = key;
    auto me = me_in.find(comm_id);
    if (me == me_in.end() || me->second < 0) continue;
    firsts.note_peer_seq(channel_of(comm_id, send, peer, me->second),
                         static_cast<uint32_t>(q.front().value));
  }
}

}  // namespace ringside::analysis
