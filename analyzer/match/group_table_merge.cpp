// GroupTable's partial states of a parallel analysis (parallel/process_group.h): what
// one process's share of the ranks added, and how partials merge, in process order, into
// the table one pass over every rank builds.  Every field merges exactly: integers and
// exact sums add, extremes compare (ties to the earlier rank, as one pass keeps them), a
// signature is the first member's, and samples keep the smallest keys (KeyedSample).
#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "match/group_table.h"

namespace ringside::analysis {

namespace {

// The communicators whose groups piece `part` of `parts` carries (as reset_gaps).
std::pair<size_t, size_t> comm_slice(size_t comms, size_t part, size_t parts) {
  return {comms * part / parts, comms * (part + 1) / parts};
}

}  // namespace

void GroupTable::save_partial(ByteWriter& w, size_t part, size_t parts) const {
  const auto [first, last] = comm_slice(comms_.size(), part, parts);
  for (size_t ci = first; ci < last; ++ci) {
    const CommGroups& cg = comms_[ci];
    w.put<uint64_t>(cg.collective_ops);
    w.put<uint64_t>(cg.p2p_ops);
    w.put_vector(cg.groups.span());
    w.put_vector(cg.other_readings.span());
  }
  if (part + 1 < parts) return;
  w.put<uint64_t>(records_);
  uint64_t used = 0;
  for (const RankProgress& p : progress_) used += !p.comms.empty() || p.ops_read > 0;
  w.put<uint64_t>(used);
  for (size_t r = 0; r < progress_.size(); ++r) {
    const RankProgress& p = progress_[r];
    if (p.comms.empty() && p.ops_read == 0) continue;
    w.put<uint64_t>(r);
    w.put_vector(p.comms);
    w.put<int64_t>(p.first_arrival);
    w.put<int64_t>(p.last_activity);
    w.put<uint64_t>(p.ops_read);
  }
  w.put<uint64_t>(p2p_open_.size());
  // Open halves in key order: the merged map is then filled the same way on every process.
  std::vector<std::pair<P2PKey, P2PHalf>> open(p2p_open_.begin(), p2p_open_.end());
  std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.comm, a.first.src, a.first.dst, a.first.peer_seq) <
           std::tie(b.first.comm, b.first.src, b.first.dst, b.first.peer_seq);
  });
  for (const auto& [k, h] : open) {
    w.put(k);
    w.put(h);
  }
  w.put<uint64_t>(p2p_pairs_.size());
  for (const auto& [k, s] : p2p_pairs_) {
    w.put(k);
    w.put<uint64_t>(s.count);
    w.put<double>(s.bytes);
    w.put<double>(s.transfer_ns);
    s.sample.save(w);
  }
  w.put<uint64_t>(channels_.size());
  for (const auto& [k, ch] : channels_) {
    w.put(k);
    w.put(ch);
  }
}

void GroupTable::merge_group(int comm, uint64_t seq, GroupAgg& g, const GroupAgg& o,
                             const std::vector<OtherReadings>& o_other) {
  if (o.max_arrival > g.max_arrival) {
    g.second_arrival = std::max(g.max_arrival, o.second_arrival);
    g.max_arrival = o.max_arrival;
    g.last_rank = o.last_rank;
  } else {
    g.second_arrival = std::max(g.second_arrival, o.max_arrival);
  }
  g.min_arrival = std::min(g.min_arrival, o.min_arrival);
  g.min_end = std::min(g.min_end, o.min_end);
  g.max_end = std::max(g.max_end, o.max_end);
  merge_gaps(comms_[static_cast<size_t>(comm)], g, o, o_other);
  if (o.has_signature) {
    note_signature(g, comm, seq, o.op, o.dtype, o.count, o.bytes, o.root, o.mismatch);
  }
  g.entered += o.entered;
  g.completed += o.completed;
  g.not_started += o.not_started;
  g.contended = g.contended || o.contended;
  g.ran_alongside = g.ran_alongside || o.ran_alongside;
}

void GroupTable::merge_gaps(CommGroups& cg, GroupAgg& g, const GroupAgg& o,
                            const std::vector<OtherReadings>& o_other) {
  if (o.other_readings >= 0 && static_cast<size_t>(o.other_readings) >= o_other.size())
    throw std::runtime_error("parallel analysis: a process sent a malformed partial state");
  if (g.other_readings >= 0 || o.other_readings >= 0) {
    OtherReadings& mine = cg.separate_readings(g);
    for (size_t k = 0; k < mine.size(); ++k)
      mine[k].merge(o.other_readings >= 0 ? o_other[static_cast<size_t>(o.other_readings)][k]
                                          : o.gap);
  }
  g.gap.merge(o.gap);
  g.gaps += o.gaps;
  g.split += o.split;
  g.since_held = g.since_held || o.since_held;
}

void GroupTable::merge_partial(ByteReader& r, size_t part, size_t parts) {
  const auto [first, last] = comm_slice(comms_.size(), part, parts);
  for (size_t ci = first; ci < last; ++ci) {
    CommGroups& cg = comms_[ci];
    cg.collective_ops += r.get<uint64_t>();
    cg.p2p_ops += r.get<uint64_t>();
    const std::vector<GroupAgg> groups = r.get_vector<GroupAgg>();
    const std::vector<OtherReadings> other = r.get_vector<OtherReadings>();
    if (cg.groups.size() < groups.size()) cg.groups.resize(groups.size());
    for (size_t i = 0; i < groups.size(); ++i)
      merge_group(static_cast<int>(ci), cg.first_seq + i, cg.groups[i], groups[i], other);
  }
  if (spills_) page_out(first, last);  // a slice is merged whole, one part after another
  if (part + 1 < parts) return;
  records_ += r.get<uint64_t>();
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    RankProgress& p = progress_.at(r.get<uint64_t>());
    p.comms = r.get_vector<RankCommProgress>();
    p.first_arrival = r.get<int64_t>();
    p.last_activity = r.get<int64_t>();
    p.ops_read = r.get<uint64_t>();
  }
  // A half whose other half an earlier process holds completes the pair, as the later
  // half's rank would have in one pass.
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    const auto key = r.get<P2PKey>();
    const auto half = r.get<P2PHalf>();
    P2PHalf& h = p2p_open_[key];
    h.bytes = half.bytes;
    h.contended = h.contended || half.contended;
    if (half.send_arrival != kNever) {
      h.send_arrival = half.send_arrival;
      h.send_end = half.send_end;
    }
    if (half.recv_arrival != kNever) {
      h.recv_arrival = half.recv_arrival;
      h.recv_end = half.recv_end;
    }
    if (h.send_arrival == kNever || h.recv_arrival == kNever) continue;
    settle_p2p(key, h);
    p2p_open_.erase(key);
  }
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    const auto key = r.get<std::pair<int64_t, int64_t>>();
    P2PStats& s = p2p_pairs_[key];
    s.src = key.first;
    s.dst = key.second;
    s.count += r.get<uint64_t>();
    s.bytes += r.get<double>();
    s.transfer_ns += r.get<double>();
    KeyedSample sample;
    sample.load(r);
    s.sample.merge(sample);
  }
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    const auto key = r.get<std::tuple<int, int32_t, int32_t>>();
    const auto ch = r.get<P2PChannel>();
    P2PChannel& c = channels_[key];
    c.sent = std::max(c.sent, ch.sent);
    c.received = std::max(c.received, ch.received);
  }
}

void GroupTable::save_gaps(ByteWriter& w, size_t part, size_t parts) const {
  const auto [first, last] = comm_slice(comms_.size(), part, parts);
  for (size_t ci = first; ci < last; ++ci) {
    w.put_vector(comms_[ci].groups.span());
    w.put_vector(comms_[ci].other_readings.span());
  }
}

void GroupTable::merge_gaps(ByteReader& r, size_t part, size_t parts) {
  const auto [first, last] = comm_slice(comms_.size(), part, parts);
  for (size_t ci = first; ci < last; ++ci) {
    CommGroups& cg = comms_[ci];
    const std::vector<GroupAgg> groups = r.get_vector<GroupAgg>();
    const std::vector<OtherReadings> other = r.get_vector<OtherReadings>();
    for (size_t i = 0; i < groups.size() && i < cg.groups.size(); ++i)
      merge_gaps(cg, cg.groups[i], groups[i], other);
  }
  if (spills_) page_out(first, last);
}

}  // namespace ringside::analysis
