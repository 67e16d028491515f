#include "load/op_window.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "load/trace_set.h"

namespace ringside::analysis {
namespace {

bool is_p2p(const trace::OpRecord& op) {
  return trace::is_p2p(static_cast<trace::OpKind>(op.op));
}

template <typename Map, typename Key, typename Value>
void keep_lowest(Map& m, const Key& k, Value v) {
  auto [it, fresh] = m.emplace(k, v);
  if (!fresh) it->second = std::min(it->second, v);
}

template <typename Map, typename Key, typename Value>
void keep_highest(Map& m, const Key& k, Value v) {
  auto [it, fresh] = m.emplace(k, v);
  if (!fresh) it->second = std::max(it->second, v);
}

template <typename Map, typename Key>
auto value_or_zero(const Map& m, const Key& k) -> typename Map::mapped_type {
  auto it = m.find(k);
  return it == m.end() ? typename Map::mapped_type{} : it->second;
}

// Extends `rb` over rows [rb.rows, end) of one rank's file.
Status scan_rows_before(const TraceSet& set, const RankInfo& ri, uint64_t end, RowsBefore& rb,
                        trace::TraceReaderCache* readers) {
  if (rb.rows > end) rb = {};  // not the file scanned before (rows never go away)
  if (rb.rows == end) return {};
  auto opened = trace::open_trace(ri.path, readers);
  if (!opened.ok()) return opened.status();
  std::unordered_map<uint64_t, int32_t> me_in;  // comm id -> the rank's comm rank
  std::vector<trace::OpRecord> buf(8192);
  while (rb.rows < end) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - rb.rows));
    auto got = opened.value()->read_ops(rb.rows, std::span<trace::OpRecord>(buf.data(), n));
    if (!got.ok()) return got.status();
    if (got.value() == 0) break;
    for (size_t i = 0; i < got.value(); ++i) {
      const trace::OpRecord& op = buf[i];
      if (!is_p2p(op)) {
        keep_highest(rb.next_seq, op.comm_id, op.seq + 1);
        continue;
      }
      auto [it, fresh] = me_in.emplace(op.comm_id, -1);
      if (fresh) {
        if (const CommInfo* c = set.comm(op.comm_id)) it->second = set.comm_rank_of(*c, ri.rank);
      }
      if (it->second >= 0)
        keep_highest(rb.next_peer_seq, channel_of(op, it->second), op.peer_seq + 1);
    }
    rb.rows += got.value();
  }
  return {};
}

}  // namespace

P2PChannelId channel_of(const trace::OpRecord& op, int32_t me) {
  return channel_of(op.comm_id, static_cast<trace::OpKind>(op.op) == trace::OpKind::kSend, op.peer,
                    me);
}

P2PChannelId channel_of(uint64_t comm_id, bool send, int32_t peer, int32_t me) {
  return {comm_id, send ? me : peer, send ? peer : me};
}

bool OpWindow::keep(const trace::OpRecord& op, int32_t me) const {
  if (!active()) return true;
  if (!is_p2p(op)) return op.seq >= first_seq_of(op.comm_id);
  if (me < 0) return true;
  auto it = first_peer_seq.find(channel_of(op, me));
  return it == first_peer_seq.end() || op.peer_seq >= it->second;
}

void WindowFirsts::note_seq(uint64_t comm_id, uint64_t s) {
  keep_lowest(seq, comm_id, s);
}

void WindowFirsts::note(const trace::OpRecord& op, int32_t me) {
  if (!is_p2p(op)) {
    note_seq(op.comm_id, op.seq);
  } else if (me >= 0) {
    note_peer_seq(channel_of(op, me), op.peer_seq);
  }
}

void WindowFirsts::note_peer_seq(const P2PChannelId& ch, uint32_t s) {
  keep_lowest(peer_seq, ch, s);
}

void build_op_window(TraceSet& set, uint64_t ops_per_rank, const std::vector<WindowFirsts>& firsts,
                     OpWindowCache* cache, trace::TraceReaderCache* readers) {
  set.window = {};
  set.window.ops_per_rank = ops_per_rank;
  if (ops_per_rank == 0) return;
  auto usable = [&](int64_t m) {
    return m >= 0 && static_cast<size_t>(m) < set.ranks.size() &&
           static_cast<size_t>(m) < firsts.size() && set.ranks[static_cast<size_t>(m)].has_file;
  };
  // Only communicators and channels some window holds ops of can have ops cut
  // (send/recv-only communicators have no collective sequence at all).
  std::unordered_set<uint64_t> comms;
  std::unordered_set<P2PChannelId, P2PChannelIdHash> channels;
  for (const WindowFirsts& f : firsts) {
    for (const auto& [id, s] : f.seq) comms.insert(id);
    for (const auto& [ch, s] : f.peer_seq) channels.insert(ch);
  }
  // A member whose window holds none of a communicator's (or channel's) ops made
  // its last one before the window, or none at all: its earlier rows tell which.
  std::vector<bool> lacks(set.ranks.size(), false);
  auto check = [&](int64_t m, bool seen) {
    if (usable(m) && !seen && set.ranks[static_cast<size_t>(m)].first_row > 0)
      lacks[static_cast<size_t>(m)] = true;
  };
  for (const CommInfo& c : set.comms) {
    if (comms.count(c.id) == 0) continue;
    for (int64_t m : c.members) {
      if (usable(m)) check(m, firsts[static_cast<size_t>(m)].seq.count(c.id) != 0);
    }
  }
  auto end_rank = [&](const P2PChannelId& ch, int32_t end) -> int64_t {
    const CommInfo* c = set.comm(ch.comm_id);
    if (c == nullptr || end < 0 || static_cast<size_t>(end) >= c->members.size()) return -1;
    return c->members[static_cast<size_t>(end)];
  };
  for (const P2PChannelId& ch : channels) {
    for (int32_t end : {ch.src, ch.dst}) {
      const int64_t m = end_rank(ch, end);
      if (usable(m)) check(m, firsts[static_cast<size_t>(m)].peer_seq.count(ch) != 0);
    }
  }
  OpWindowCache local;
  OpWindowCache& rows = cache != nullptr ? *cache : local;
  std::vector<const RowsBefore*> before(set.ranks.size(), nullptr);
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    if (!lacks[r]) continue;
    RankInfo& ri = set.ranks[r];
    RowsBefore& rb = rows.files[ri.path];
    // A rank whose earlier rows cannot be read is not used (exclude_unreadable_ranks).
    if (Status s = scan_rows_before(set, ri, ri.first_row, rb, readers); !s.ok()) {
      if (readers != nullptr) readers->forget(ri.path);
      ri.read_error = s.message();
      continue;
    }
    before[r] = &rb;
  }
  // Where a member's kept ops of a communicator begin: its window's first, or
  // past everything it made before the window.
  auto from = [&](int64_t m, auto seen_in_window, auto seen_before) -> uint64_t {
    const RankInfo& ri = set.ranks[static_cast<size_t>(m)];
    if (auto v = seen_in_window(firsts[static_cast<size_t>(m)]); v) return *v;
    if (ri.first_row == 0 || before[static_cast<size_t>(m)] == nullptr) return 0;
    return seen_before(*before[static_cast<size_t>(m)]);
  };
  for (const CommInfo& c : set.comms) {
    if (comms.count(c.id) == 0) continue;
    uint64_t cut = 0;
    for (int64_t m : c.members) {
      if (!usable(m)) continue;
      cut = std::max(cut,
                     from(
                         m,
                         [&](const WindowFirsts& f) -> std::optional<uint64_t> {
                           auto it = f.seq.find(c.id);
                           if (it == f.seq.end()) return std::nullopt;
                           return it->second;
                         },
                         [&](const RowsBefore& rb) { return value_or_zero(rb.next_seq, c.id); }));
    }
    set.window.first_seq[c.id] = cut;
  }
  for (const P2PChannelId& ch : channels) {
    uint64_t cut = 0;
    for (int32_t end : {ch.src, ch.dst}) {
      const int64_t m = end_rank(ch, end);
      if (!usable(m)) continue;
      cut = std::max(cut, from(
                              m,
                              [&](const WindowFirsts& f) -> std::optional<uint64_t> {
                                auto it = f.peer_seq.find(ch);
                                if (it == f.peer_seq.end()) return std::nullopt;
                                return it->second;
                              },
                              [&](const RowsBefore& rb) -> uint64_t {
                                return value_or_zero(rb.next_peer_seq, ch);
                              }));
    }
    set.window.first_peer_seq[ch] = static_cast<uint32_t>(std::min<uint64_t>(cut, UINT32_MAX));
  }
}

}  // namespace ringside::analysis
