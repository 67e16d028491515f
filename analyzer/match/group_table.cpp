#include "match/group_table.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <unordered_map>

#include "ringside/bandwidth.h"
#include "ringside/trace_validate.h"

namespace ringside::analysis {
namespace {

constexpr size_t kMaxSamples = 256;
// The first ops of a communicator (and the first transfer of a send/recv pair) set up
// its connections: they time the setup, not the link.
constexpr uint64_t kWarmupOps = 2;
// Collectives that ran alongside the compute, out of a communicator's, that show its
// ops do.
constexpr uint64_t kMinAlongsideGroups = 3;
constexpr double kMinAlongsideFraction = 0.01;

using trace::OpKind;
using trace::OpRecord;

int size_log2(uint64_t bytes) {
  int b = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++b;
  }
  return b;
}

}  // namespace

void bounded_push(std::vector<float>& v, float x, uint64_t seen) {
  if (v.size() < kMaxSamples) {
    v.push_back(x);
  } else {
    v[seen % kMaxSamples] = x;
  }
}

void KeyedSample::add(uint64_t key, float x) {
  const std::pair<uint64_t, float> item{key, x};
  if (heap_.size() < kMaxSamples) {
    heap_.push_back(item);
    std::push_heap(heap_.begin(), heap_.end());
  } else if (item < heap_.front()) {
    std::pop_heap(heap_.begin(), heap_.end());
    heap_.back() = item;
    std::push_heap(heap_.begin(), heap_.end());
  }
}

void KeyedSample::merge(const KeyedSample& o) {
  for (const auto& [key, x] : o.heap_) add(key, x);
}

std::vector<float> KeyedSample::values() const {
  std::vector<std::pair<uint64_t, float>> sorted = heap_;
  std::sort(sorted.begin(), sorted.end());
  std::vector<float> out;
  out.reserve(sorted.size());
  for (const auto& [key, x] : sorted) out.push_back(x);
  return out;
}

RankCommProgress& RankProgress::at(int comm) {
  for (auto& c : comms) {
    if (c.comm == comm) return c;
  }
  comms.push_back({});
  comms.back().comm = comm;
  return comms.back();
}

const RankCommProgress* RankProgress::find(int comm) const {
  for (const auto& c : comms) {
    if (c.comm == comm) return &c;
  }
  return nullptr;
}

GroupTable::GroupTable(const TraceSet& set, const std::string& spill_dir)
    : set_(set), spills_(!spill_dir.empty()) {
  comms_.resize(set.comms.size());
  for (CommGroups& cg : comms_) {
    cg.groups.spill_to(spill_dir);
    cg.other_readings.spill_to(spill_dir);
  }
  for (const CommInfo& c : set.comms)
    comms_[static_cast<size_t>(c.index)].first_seq = set.window.first_seq_of(c.id);
  progress_.resize(set.ranks.size());
}

void GroupTable::plan_page_out(std::span<const int64_t> share) {
  page_out_after_.clear();
  if (!spills_) return;
  page_out_after_.resize(set_.ranks.size());
  std::vector<int64_t> order(set_.ranks.size(), -1);  // place in share, by rank
  for (size_t i = 0; i < share.size(); ++i) {
    const auto r = static_cast<size_t>(share[i]);
    if (r < order.size() && set_.ranks[r].has_file) order[r] = static_cast<int64_t>(i);
  }
  for (const CommInfo& c : set_.comms) {
    int64_t last = -1;
    for (int64_t m : c.members) {
      if (m >= 0 && static_cast<size_t>(m) < order.size() && order[static_cast<size_t>(m)] >= 0 &&
          (last < 0 || order[static_cast<size_t>(m)] > order[static_cast<size_t>(last)]))
        last = m;
    }
    if (last >= 0) page_out_after_[static_cast<size_t>(last)].push_back(c.index);
  }
}

void GroupTable::passed(int64_t rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= page_out_after_.size()) return;
  for (int ci : page_out_after_[static_cast<size_t>(rank)]) page_out(ci, ci + 1);
}

void GroupTable::page_out(size_t first, size_t last) const {
  for (size_t ci = first; ci < last && ci < comms_.size(); ++ci) {
    comms_[ci].groups.page_out();
    comms_[ci].other_readings.page_out();
  }
}

namespace {

// Ops issued in one ncclGroupStart/End on one stream finish together.  True for
// each op whose group (per-thread group number and stream) also holds a
// collective or a send/recv with another peer.
std::vector<bool> mixed_groups(std::span<const OpRecord> ops) {
  struct Group {
    int32_t peer = -2;  // the one p2p peer seen so far; -2: none yet
    bool mixed = false;
  };
  std::unordered_map<uint64_t, Group> groups;
  auto key = [](const OpRecord& op) { return op.stream * 0x9e3779b97f4a7c15ull ^ op.group_id; };
  for (const OpRecord& op : ops) {
    if (op.group_id == 0) continue;
    Group& g = groups[key(op)];
    const int32_t peer = trace::is_p2p(static_cast<OpKind>(op.op)) ? op.peer : -1;
    if (g.peer != -2 && (g.peer != peer || peer == -1)) g.mixed = true;
    g.peer = peer;
  }
  std::vector<bool> out(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].group_id != 0) out[i] = groups[key(ops[i])].mixed;
  }
  return out;
}

}  // namespace

Status GroupTable::add_rank(const RankInfo& rank, std::span<const OpRecord> all,
                            HeldOwnCompute* held, size_t valid) {
  RankProgress& prog = progress_[static_cast<size_t>(rank.rank)];
  // One rank's ops are held while it is matched: attributing its time needs all of
  // its streams at once.  A rank whose ops fail validation adds nothing: the table
  // is then the one built without it, and the caller only has to call it missing.
  RankComms comms(set_, rank.rank);
  for (size_t i = 0; i < all.size(); ++i) {
    const OpRecord& op = all[i];
    const uint64_t row = rank.first_row + i;
    if (Status v = i < valid ? Status{} : trace::validate_op(op); !v.ok()) {
      return Status::error(rank.path + ": /ops row " + std::to_string(row) + ": " + v.message() +
                           " (corrupt file)");
    }
    // An op on a communicator the rank's own comm table does not place it in:
    // the table or the op is damaged, and which one cannot be told.
    if (comms.of(op.comm_id).me < 0) {
      return Status::error(rank.path + ": /ops row " + std::to_string(row) + " is on comm " +
                           std::to_string(op.comm_id) +
                           ", which the file's comm table does not list for this rank "
                           "(corrupt file)");
    }
  }
  records_ += all.size();
  HeldOwnCompute measured;
  HeldOwnCompute& kept = held != nullptr ? *held : measured;
  kept.own.emplace(rank, all);
  kept.knew_others = false;
  const OwnCompute& own = *kept.own;
  const std::vector<bool> mixed = mixed_groups(all);
  for (uint32_t i : own.order()) {
    const std::optional<ComputeReadings> before = own.before(i);
    // A send/recv grouped with ops to other peers ends when its whole group does:
    // its time is not its link's.
    const bool shares_end = mixed[i] && trace::is_p2p(static_cast<OpKind>(all[i].op));
    add_op(rank, prog, all[i], comms.of(all[i].comm_id),
           {.before = before ? &*before : nullptr,
            .contended = own.contended(i) || shares_end,
            .started_another = own.started_another(i),
            .split = own.split(i),
            .since_held = own.since_held(i)});
  }
  // Ops outstanding at the last flush that /ops does not hold yet.
  for (const OpRecord& op : rank.pending)
    add_op(rank, prog, op, comms.of(op.comm_id), {.pending = true});
  return {};
}

void GroupTable::note_signature(GroupAgg& g, int comm, uint64_t seq, uint8_t op, uint8_t dtype,
                                uint64_t count, uint64_t bytes, int32_t root, bool mismatched) {
  if (!g.has_signature) {
    g.has_signature = true;
    g.op = op;
    g.dtype = dtype;
    g.count = count;
    g.bytes = bytes;
    g.root = root;
  }
  const bool differs = g.op != op || g.dtype != dtype || g.count != count || g.root != root;
  if (!g.mismatch && (mismatched || differs)) {
    g.mismatch = true;
    mismatches_.emplace_back(comm, seq);
  }
}

void GroupTable::add_op(const RankInfo& rank, RankProgress& prog, const OpRecord& op,
                        RankComms::Entry in, const OwnView& own) {
  if (in.index < 0) return;  // a comm this rank never announced: cannot match
  const int ci = in.index;
  const CommInfo& comm = set_.comms[static_cast<size_t>(ci)];
  const bool p2p = trace::is_p2p(static_cast<OpKind>(op.op));
  const int me = p2p ? in.me : -1;
  // Ops before a window's cut (load/op_window.h) are not matched: some members' are not read.
  // A collective's cut is its communicator's first_seq, held here (not looked up per op).
  CommGroups& cg = comms_[static_cast<size_t>(ci)];
  if (p2p ? !set_.window.keep(op, me) : op.seq < cg.first_seq) return;
  const OpTimes t = op_times(rank, op);
  if (t.arrival == kNever) return;
  ++prog.ops_read;
  prog.first_arrival = std::min(prog.first_arrival, t.arrival);
  prog.last_activity = std::max({prog.last_activity, t.arrival, t.end});
  if (p2p) {
    if (me >= 0 && op.peer >= 0 && op.peer < comm.nranks) {
      const bool send = static_cast<OpKind>(op.op) == OpKind::kSend;
      P2PChannel& ch = channels_[{ci, send ? me : op.peer, send ? op.peer : me}];
      int64_t& side = send ? ch.sent : ch.received;
      side = std::max(side, static_cast<int64_t>(op.peer_seq));
    }
    if (!own.pending) {
      ++cg.p2p_ops;
      add_p2p(rank, comm, op, t, own.contended);
    }
    return;
  }
  if (op.seq >= trace::kMaxSeq) return;
  RankCommProgress& rc = prog.at(ci);
  const int64_t seq = static_cast<int64_t>(op.seq);
  if (own.pending && seq <= rc.max_seq_entered) return;  // already in /ops
  ++rc.ops;
  ++cg.collective_ops;
  rc.max_seq_entered = std::max(rc.max_seq_entered, seq);
  rc.last_arrival = std::max(rc.last_arrival, t.arrival);
  if (t.end != kNever) rc.max_seq_completed = std::max(rc.max_seq_completed, seq);

  const uint64_t at = op.seq - cg.first_seq;
  if (cg.groups.size() <= at) cg.groups.resize(at + 1);
  GroupAgg& g = cg.groups[at];
  const int32_t root = trace::is_p2p(static_cast<OpKind>(op.op)) ? -1 : op.peer;
  note_signature(g, ci, op.seq, op.op, op.dtype, op.count, op.bytes, root, false);
  ++g.entered;
  if (!t.device_started) ++g.not_started;
  if (t.arrival > g.max_arrival) {
    g.second_arrival = g.max_arrival;
    g.max_arrival = t.arrival;
    g.last_rank = static_cast<int32_t>(rank.rank);
  } else if (t.arrival > g.second_arrival) {
    g.second_arrival = t.arrival;
  }
  g.min_arrival = std::min(g.min_arrival, t.arrival);
  g.contended = g.contended || own.contended;
  g.ran_alongside = g.ran_alongside || own.started_another;
  if (t.end != kNever) {
    ++g.completed;
    g.min_end = std::min(g.min_end, t.end);
    g.max_end = std::max(g.max_end, t.end);
  }
  // The rank's own compute before the op (match/own_compute.h).
  if (own.before != nullptr) add_gap(cg, g, *own.before, own.split, own.since_held);
  (void)comm;
}

void GroupTable::add_p2p(const RankInfo& rank, const CommInfo& comm, const OpRecord& op,
                         const OpTimes& t, bool contended) {
  const int me = set_.comm_rank_of(comm, rank.rank);
  if (me < 0 || op.peer < 0) return;
  const bool send = static_cast<OpKind>(op.op) == OpKind::kSend;
  P2PKey key{comm.index, send ? me : op.peer, send ? op.peer : me, op.peer_seq};
  P2PHalf& h = p2p_open_[key];
  h.bytes = op.bytes;
  h.contended = h.contended || contended;
  if (send) {
    h.send_arrival = t.arrival;
    h.send_end = t.end;
  } else {
    h.recv_arrival = t.arrival;
    h.recv_end = t.end;
  }
  if (h.send_arrival == kNever || h.recv_arrival == kNever) return;
  settle_p2p(key, h);
  p2p_open_.erase(key);
}

void GroupTable::settle_p2p(const P2PKey& key, const P2PHalf& h) {
  if (h.send_end == kNever || h.recv_end == kNever) return;
  const CommInfo& comm = set_.comms[static_cast<size_t>(key.comm)];
  if (static_cast<size_t>(std::max(key.src, key.dst)) >= comm.members.size()) return;
  // The link is timed only when the receiver was already waiting: then the data moved
  // from the sender's arrival to the receive's end.  A receiver that arrived later may
  // find the data (or part of it) already buffered (NCCL's sends complete once their
  // data is in the peer's buffers), so its receive says nothing about the link.
  // Nor when either end ran another op on another stream meanwhile (contention), or
  // for a pair's first transfer (connection setup).
  if (h.recv_arrival > h.send_arrival || h.recv_end <= h.send_arrival || h.contended ||
      key.peer_seq < kWarmupOps - 1)
    return;
  const int64_t src = comm.members[static_cast<size_t>(key.src)];
  const int64_t dst = comm.members[static_cast<size_t>(key.dst)];
  P2PStats& s = p2p_pairs_[{src, dst}];
  s.src = src;
  s.dst = dst;
  const double transfer = static_cast<double>(h.recv_end - h.send_arrival);
  s.transfer_ns += transfer;
  s.bytes += static_cast<double>(h.bytes);
  if (h.bytes >= (64u << 10))
    s.sample.add(P2PKeyHash{}(key), static_cast<float>(static_cast<double>(h.bytes) / transfer));
  ++s.count;
}

OtherReadings& CommGroups::separate_readings(GroupAgg& g) {
  if (g.other_readings < 0) {
    g.other_readings = static_cast<int32_t>(other_readings.size());
    other_readings.emplace_back().fill(g.gap);
  }
  return other_readings[static_cast<size_t>(g.other_readings)];
}

void GroupTable::add_gap(CommGroups& cg, GroupAgg& g, const ComputeReadings& before, bool split,
                         bool since_held) {
  if (g.other_readings >= 0 || readings_differ(before)) {
    OtherReadings& other = cg.separate_readings(g);
    for (size_t k = 1; k < before.size(); ++k) other[k - 1].add(before[k]);
  }
  g.gap.add(before[0]);
  ++g.gaps;
  g.split += split ? 1 : 0;
  g.since_held = g.since_held || since_held;
}

void GroupTable::reset_gaps(size_t part, size_t parts) {
  for (size_t ci = comms_.size() * part / parts; ci < comms_.size() * (part + 1) / parts; ++ci) {
    comms_[ci].other_readings.clear();
    for (GroupAgg& g : comms_[ci].groups) {
      g.gap = {};
      g.other_readings = -1;
      g.gaps = 0;
      g.split = 0;
      g.since_held = false;
    }
  }
}

Status GroupTable::add_gaps(const RankInfo& rank, std::span<const OpRecord> all,
                            HeldOwnCompute* held) {
  HeldOwnCompute measured;
  const OwnCompute& own = own_compute(rank, all, held != nullptr ? *held : measured);
  RankComms comms(set_, rank.rank);
  for (uint32_t i : own.order()) {
    const OpRecord& op = all[i];
    const std::optional<ComputeReadings> before = own.before(i);
    if (!before || trace::is_p2p(static_cast<OpKind>(op.op))) continue;
    const int ci = comms.of(op.comm_id).index;
    if (ci < 0) continue;
    CommGroups& cg = comms_[static_cast<size_t>(ci)];
    if (op.seq >= cg.first_seq && op.seq < cg.end_seq())
      add_gap(cg, cg.groups[op.seq - cg.first_seq], *before, own.split(i), own.since_held(i));
  }
  return {};
}

const OwnCompute& GroupTable::own_compute(const RankInfo& rank, std::span<const OpRecord> all,
                                          HeldOwnCompute& held) const {
  // Knowing nothing, every op is taken to hold the rank up, and to end on every member
  // when it ends on the rank: what the table says of every op when no op was seen running
  // alongside and no rooted one ended apart.
  if (held.own && (held.knew_others || !measures_again())) return *held.own;
  held.own.emplace(
      rank, all, [this](const OpRecord& op) { return ran_alongside(op); },
      [this](const OpRecord& op) { return last_end(op); });
  held.knew_others = true;
  return *held.own;
}

int64_t GroupTable::last_end(const OpRecord& op) const {
  if (!any_rooted_apart_ || !trace::is_rooted(static_cast<OpKind>(op.op))) return kNever;
  const CommInfo* c = set_.comm(op.comm_id);
  const GroupAgg* g = c != nullptr ? group(c->index, op.seq) : nullptr;
  return g != nullptr && g->complete(c->present) ? g->max_end : kNever;
}

Alongside GroupTable::ran_alongside(const OpRecord& op) const {
  if (trace::is_p2p(static_cast<OpKind>(op.op))) return Alongside::kHeld;
  auto it = set_.comm_index.find(op.comm_id);
  if (it == set_.comm_index.end()) return Alongside::kHeld;
  const GroupAgg* g = group(it->second, op.seq);
  if (g != nullptr && g->ran_alongside) return Alongside::kSeen;
  const CommGroups& cg = comms_[static_cast<size_t>(it->second)];
  if (cg.alongside) return Alongside::kLikely;
  return cg.alongside_groups > 0 ? Alongside::kPossible : Alongside::kHeld;
}

P2PChannel GroupTable::p2p_channel(int comm, int32_t src, int32_t dst) const {
  auto it = channels_.find({comm, src, dst});
  return it == channels_.end() ? P2PChannel{} : it->second;
}

void GroupTable::finalize() {
  // In (comm, seq) order, however the ranks were read (parallel/process_group.h).
  std::sort(mismatches_.begin(), mismatches_.end());
  any_alongside_ = any_rooted_apart_ = false;
  for (auto& cg : comms_) {
    cg.timed_groups = cg.alongside_groups = 0;
    for (const GroupAgg& g : cg.groups) {
      if (g.completed == 0) continue;
      ++cg.timed_groups;
      cg.alongside_groups += g.ran_alongside;
      any_rooted_apart_ = any_rooted_apart_ || (trace::is_rooted(static_cast<OpKind>(g.op)) &&
                                                g.max_end - g.min_end >= kBackToBackNs);
    }
    // Ops launched together, or threads sharing a file, show it now and then.
    cg.alongside = cg.alongside_groups >= kMinAlongsideGroups &&
                   static_cast<double>(cg.alongside_groups) >=
                       kMinAlongsideFraction * static_cast<double>(cg.timed_groups);
    any_alongside_ = any_alongside_ || cg.alongside_groups > 0;
  }
  // Communicators of one role and size run the same code (every data-parallel group
  // the same gradient hook), so what one shows holds for all: a group whose members
  // never waited long enough in its buckets to start another op meanwhile still ran
  // them alongside.  Roles come from infer_comm_roles, when it ran before.
  std::set<std::pair<std::string, int>> alongside_families;
  for (const auto& c : set_.comms) {
    if (!c.role.empty() && comms_[static_cast<size_t>(c.index)].alongside)
      alongside_families.insert({c.role, c.nranks});
  }
  for (const auto& c : set_.comms) {
    if (alongside_families.count({c.role, c.nranks}) != 0)
      comms_[static_cast<size_t>(c.index)].alongside = true;
  }
  std::map<std::tuple<int, uint8_t, int>, CommLinkStats> links;
  for (const auto& c : set_.comms) {
    const CommGroups& cg = comms_[static_cast<size_t>(c.index)];
    for (uint64_t seq = std::max(kWarmupOps, cg.first_seq); seq < cg.end_seq(); ++seq) {
      const GroupAgg& g = cg.groups[seq - cg.first_seq];
      if (!g.complete(c.present) || c.present < 2 || g.mismatch || g.contended) continue;
      const int64_t transfer = g.transfer();
      if (transfer <= 0 || g.bytes == 0) continue;
      CommLinkStats& l = links[{c.index, g.op, size_log2(g.bytes)}];
      l.comm = c.index;
      l.op = g.op;
      l.size_log2 = size_log2(g.bytes);
      l.transfer_ns += static_cast<double>(transfer);
      l.bytes += static_cast<double>(g.bytes);
      Bandwidth bw = compute_bandwidth(static_cast<OpKind>(g.op), g.bytes,
                                       static_cast<double>(transfer) / 1e9, c.nranks);
      bounded_push(l.busbw, static_cast<float>(bw.bus_gbps), l.count);
      ++l.count;
    }
  }
  links_.clear();
  for (auto& [k, l] : links) links_.push_back(std::move(l));
  p2p_done_.clear();
  for (const auto& [k, s] : p2p_pairs_) {
    p2p_done_.push_back(s);
    p2p_done_.back().busbw = s.sample.values();
  }
}

}  // namespace ringside::analysis
