// Hangs, post-mortem, as a wait-for graph over every rank's last state.
//
// Nodes:
//   op      an op a live rank still had outstanding at the end of its trace
//   group   one collective (comm, seq) or one send/recv (channel, peer seq):
//           it completes only when every member entered it and its device started it
//   stream  "the rank's GPU has not started this op": waits for the rank's
//           earlier outstanding ops (same stream for certain, other streams
//           through event waits, as overlapped DP buckets do)
//   rank    "this rank has not entered an op the others need": waits for the
//           rank's own stuck ops, if it has any
// Roots are the nodes nothing else explains: a rank that never entered while
// alive (missing_rank), a dead process (dead_rank), a stream whose next op
// never started with nothing before it outstanding (gpu_stall), a collective
// every member entered and started that none completed (all_stuck), a desync,
// or ranks that wait on each other in a cycle.  Only roots become findings;
// the ranks they hold up are folded under them as consequences.
#include <algorithm>
#include <csignal>
#include <map>
#include <set>
#include <string_view>

#include "detect/context.h"
#include "report/format.h"
#include "report/next_command.h"
#include "ringside/count_text.h"

namespace ringside::analysis {
namespace {

using trace::OpKind;
using trace::OpStatus;

std::string list_ranks(const std::vector<int64_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  if (r.size() > 8) s += ", ... (" + std::to_string(r.size()) + " ranks)";
  return s;
}

// How an all_stuck finding's evidence ends.
constexpr std::string_view kStuckCause =
    ": the transfer itself is stuck (network, NCCL or driver), not a missing rank.";

// Removes `ranks` (the culprits) from the consequences; drops emptied entries.
void drop_ranks(std::vector<Consequence>& list, const std::vector<int64_t>& ranks) {
  for (auto& q : list) {
    std::erase_if(q.ranks, [&](int64_t x) {
      return std::find(ranks.begin(), ranks.end(), x) != ranks.end();
    });
  }
  std::erase_if(list, [](const Consequence& q) { return q.ranks.empty(); });
}

// Adds `more` to `list`: the ranks waiting in the same op are one entry (roots merged into
// one finding often hold up the same ranks).
void add_consequences(std::vector<Consequence>& list, const std::vector<Consequence>& more) {
  for (const Consequence& q : more) {
    auto same = std::find_if(list.begin(), list.end(), [&](const Consequence& x) {
      return x.comm == q.comm && x.seq == q.seq && x.op == q.op;
    });
    if (same == list.end()) {
      list.push_back(q);
      continue;
    }
    same->ranks.insert(same->ranks.end(), q.ranks.begin(), q.ranks.end());
    std::sort(same->ranks.begin(), same->ranks.end());
    same->ranks.erase(std::unique(same->ranks.begin(), same->ranks.end()), same->ranks.end());
    same->waited_s = std::max(same->waited_s, q.waited_s);
  }
}

// How a rank's tracing ended.
enum class End { kNoTrace, kClosed, kSignalled, kVanished };

struct RankEnd {
  End end = End::kNoTrace;
  bool dead = false;  // the process ended while the job went on (crash, kill, early exit)
  // No exit record, in a job that otherwise ended normally and waited for nobody: the
  // process ended without the probe's exit handler; not dead (WaitGraph::decide_deaths).
  bool quiet = false;
  int64_t last_seen = kNever;
};

enum class RootKind { kMissing, kNoTrace, kDead, kStall, kStuck, kDesync, kCycle };

struct Root {
  RootKind kind;
  // Rests on a snapshot that may predate the end (the process was killed
  // before its final flush, or its communicator was aborted): named only when
  // nothing firmer explains the wait.
  bool weak = false;
  int64_t rank = -1;  // kMissing, kNoTrace, kDead, kStall
  int op = -1;        // kStall: the op that never started
  // kStall: the GPU started the op (a send/recv whose peer finished its half, with nothing
  // issued beside it still outstanding) and never completed it.
  bool started = false;
  // kMissing: the rank is inside its call of op `op`, which never returned (its final
  // snapshot says so), with nothing earlier outstanding on the call's stream.
  bool in_call = false;
  int group = -1;  // kStuck, kDesync; the first group waiting on a rank root
  std::set<int64_t> victims;
  double waited_s = 0;
};

struct Outstanding {
  int64_t rank = 0;
  int comm = 0;
  trace::OpRecord rec{};
  int64_t enter = kNever;  // job time
  bool started = false;    // the device started it
  bool host_pending = false;
  double waited_s = 0;  // from its arrival to the end of the rank's trace
  int group = -1;
};

struct Group {
  int comm = 0;
  uint64_t seq = 0;
  bool p2p = false;
  int32_t src = -1, dst = -1;  // p2p: comm ranks
  uint8_t op = 0;
};

class WaitGraph {
 public:
  explicit WaitGraph(const Context& ctx) : ctx_(ctx), set_(ctx.set) {}

  void build();
  void solve();
  void report(std::vector<Finding>& out);
  // Ranks whose trace has no exit record in a job that otherwise ended normally.
  std::vector<int64_t> quiet_ends() const {
    std::vector<int64_t> ranks;
    for (size_t r = 0; r < ends_.size(); ++r)
      if (ends_[r].quiet) ranks.push_back(static_cast<int64_t>(r));
    return ranks;
  }

 private:
  // Node ids: ops [0, ops), groups, streams (one per op), ranks.
  int op_node(int i) const { return i; }
  int group_node(int g) const { return static_cast<int>(ops_.size()) + g; }
  int stream_node(int i) const { return static_cast<int>(ops_.size() + groups_.size()) + i; }
  int rank_node(int64_t r) const {
    return static_cast<int>(2 * ops_.size() + groups_.size()) + static_cast<int>(r);
  }
  // One per group: "a member no trace names".
  int unknown_node(int g) const {
    return static_cast<int>(2 * ops_.size() + groups_.size() + set_.ranks.size()) + g;
  }
  int node_count() const {
    return static_cast<int>(2 * ops_.size() + 2 * groups_.size() + set_.ranks.size());
  }

  void classify_ends();
  void note_given_up();
  bool aborted(int64_t rank, uint64_t comm_id) const;
  int64_t own_abort_at(int64_t rank, uint64_t comm_id) const;
  void collect_outstanding();
  void decide_deaths();
  void drop_dead_ranks_ops();
  int group_for(const Outstanding& o);
  bool entered(int64_t rank, const Group& g) const;
  std::vector<int64_t> absent_from_launch(const Outstanding& o) const;
  bool done_by_others(const Outstanding& o) const;
  bool peer_done(const Outstanding& o) const;
  void group_launches();
  const std::vector<int>* launch_of(const Outstanding& o) const;
  const Outstanding* outstanding_of(int64_t rank, int group) const;
  int add_root(Root r);
  bool snapshot_final(int64_t rank, uint64_t comm_id) const;
  void edges();
  std::string where(int group) const;
  void note_gave_up(Finding& f) const;
  Finding root_finding(const Root& r, size_t id) const;

  const Context& ctx_;
  const TraceSet& set_;
  std::vector<RankEnd> ends_;
  std::vector<Outstanding> ops_;
  std::vector<Group> groups_;
  std::map<std::tuple<int, bool, int32_t, int32_t, uint64_t>, int> group_index_;
  std::vector<std::vector<int>> by_rank_;  // outstanding op indices per rank, by enter time
  std::vector<std::vector<int>> deps_;
  std::vector<int> root_of_node_;  // root id if the node is a root, else -1
  // Groups every member entered and started that wait for ops grouped with theirs.
  std::vector<int> maybe_stuck_;
  // (rank, NCCL group id, stream) -> the outstanding ops of that launch.
  std::map<std::tuple<int64_t, uint32_t, uint64_t>, std::vector<int>> launches_;
  std::vector<Root> roots_;
  std::vector<std::vector<int>> reach_;  // root ids each node leads to
  std::vector<bool> cross_stream_only_;  // stream nodes whose deps are other streams' ops
  // Per rank, (comm id, job time of its first ncclCommAbort of it, or unknown); and the ranks that
  // aborted a communicator after waiting in one of its ops (note_given_up).
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> aborts_;
  std::vector<bool> gave_up_;
};

const char* signal_name(int64_t sig) {
  switch (sig) {
    case SIGABRT:
      return "SIGABRT, an abort";
    case SIGSEGV:
      return "SIGSEGV, a segmentation fault";
    case SIGBUS:
      return "SIGBUS, a bus error";
    case SIGFPE:
      return "SIGFPE, an arithmetic error";
    case SIGILL:
      return "SIGILL, an illegal instruction";
    default:
      return "a fatal signal";
  }
}

bool fatal_signal(int64_t sig) {
  return sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

void WaitGraph::classify_ends() {
  ends_.resize(set_.ranks.size());
  for (const auto& ri : set_.ranks) {
    if (!ri.has_file) continue;
    RankEnd& e = ends_[static_cast<size_t>(ri.rank)];
    e.last_seen = ctx_.last_seen_ns(ri.rank);
    e.end = !ri.shutdown ? End::kVanished : ri.last_signal != 0 ? End::kSignalled : End::kClosed;
  }
}

// Whether the rank aborted communicator `comm_id`, and when (its first ncclCommAbort of
// it with a known time, in job time; unknown if it never did or no time is known).
bool WaitGraph::aborted(int64_t rank, uint64_t comm_id) const {
  const auto& aborts = aborts_[static_cast<size_t>(rank)];
  return std::any_of(aborts.begin(), aborts.end(),
                     [&](const auto& a) { return a.first == comm_id; });
}

int64_t WaitGraph::own_abort_at(int64_t rank, uint64_t comm_id) const {
  for (const auto& [comm, at] : aborts_[static_cast<size_t>(rank)]) {
    if (comm == comm_id) return at;
  }
  return trace::kUnknownTime;
}

// A rank that aborted a communicator while one of its ops there had been outstanding for
// `--hang-wait` or longer gave up waiting, as a framework's watchdog does (PyTorch aborts
// the communicators after its NCCL timeout, then the process dies of SIGABRT): its abort
// and its death are reactions to the wait, and the op it abandoned is still a wait for
// what held it.  A rank that aborts or dies without such a wait is judged as before.
void WaitGraph::note_given_up() {
  gave_up_.assign(set_.ranks.size(), false);
  aborts_.assign(set_.ranks.size(), {});
  const auto min_wait = static_cast<int64_t>(ctx_.th.hang_min_wait_s * 1e9);
  for (const auto& ri : set_.ranks) {
    if (!ri.has_file) continue;
    auto& aborts = aborts_[static_cast<size_t>(ri.rank)];
    for (const auto& ev : ri.events) {
      if (ev.kind != static_cast<uint32_t>(trace::EventKind::kCommAbort)) continue;
      const int64_t t = ri.to_job(ev.t_ns);
      auto seen = std::find_if(aborts.begin(), aborts.end(),
                               [&](const auto& a) { return a.first == ev.comm_id; });
      if (seen == aborts.end()) {
        aborts.emplace_back(ev.comm_id, t);
      } else if (t != trace::kUnknownTime &&
                 (seen->second == trace::kUnknownTime || t < seen->second)) {
        seen->second = t;
      }
    }
    if (aborts.empty()) continue;
    for (const auto& rec : ri.pending) {
      if (rec.status == static_cast<uint8_t>(OpStatus::kComplete)) continue;
      const int64_t abort_at = own_abort_at(ri.rank, rec.comm_id);
      const int64_t entered = ri.to_job(rec.t_enter_ns);
      if (abort_at == trace::kUnknownTime || entered == trace::kUnknownTime) continue;
      if (abort_at - entered >= min_wait) gave_up_[static_cast<size_t>(ri.rank)] = true;
    }
  }
}

// Who died first.  A crash signal the probe recorded (abort, segfault) is
// proof.  Without one, a trace with no clean end is a dead process when another
// rank's trace closed or went on well beyond it, unless the rank itself was
// waiting for others at its last flush: launchers kill the survivors of a crash
// (mpirun at once, with SIGKILL), and those are victims, not causes.  When the
// ranks left are spread over several nodes, nothing in the traces tells the
// first death from the teardown: no rank is named (abnormal_end says so).
void WaitGraph::decide_deaths() {
  int64_t latest = kNever;
  bool any_closed = false, any_signalled = false, crash_signal = false;
  for (const auto& ri : set_.ranks) {
    if (!ri.has_file) continue;
    latest = std::max(latest, ends_[static_cast<size_t>(ri.rank)].last_seen);
    any_closed = any_closed || ri.shutdown;
    any_signalled = any_signalled || ends_[static_cast<size_t>(ri.rank)].end == End::kSignalled;
    if (fatal_signal(ri.last_signal) && !gave_up_[static_cast<size_t>(ri.rank)]) {
      ends_[static_cast<size_t>(ri.rank)].dead = true;
      crash_signal = true;
    }
  }
  if (crash_signal) return;
  const int64_t gap = static_cast<int64_t>(ctx_.th.dead_gap_s * 1e9);
  // When the others began waiting: a rank whose trace kept being flushed well
  // after that was alive while they waited (stuck, not dead), even if a
  // teardown later killed it before it could close its file.
  int64_t wait_start = INT64_MAX;
  for (const auto& o : ops_) {
    if (!done_by_others(o)) wait_start = std::min(wait_start, o.enter);
  }
  // A job that ended normally but for the exit records of ranks that ended with it:
  // every other traced rank closed its trace without a signal, and no op of any rank
  // was left waiting for another.  Such a process ended without the probe's exit
  // handler (os._exit, or a kill or crash after its last collective) and nothing the
  // job ran waited for it: it is not named dead, the report notes it (quiet_ends).
  const bool ended_normally = wait_start == INT64_MAX && any_closed && !any_signalled;
  const int64_t alive_margin = static_cast<int64_t>(ctx_.th.alive_margin_s * 1e9);
  std::vector<int64_t> candidates;
  std::set<int> nodes;
  for (const auto& ri : set_.ranks) {
    if (!ri.has_file) continue;
    RankEnd& e = ends_[static_cast<size_t>(ri.rank)];
    if (e.end != End::kVanished) continue;
    if (ended_normally && latest != kNever && e.last_seen >= latest - gap) {
      e.quiet = true;
      continue;
    }
    if (!any_closed && !(latest != kNever && e.last_seen < latest - gap)) continue;
    bool waiting = false;
    for (int j : by_rank_[static_cast<size_t>(ri.rank)])
      waiting = waiting || !done_by_others(ops_[static_cast<size_t>(j)]);
    if (waiting) continue;
    if (wait_start != INT64_MAX && e.last_seen > wait_start + alive_margin) continue;
    candidates.push_back(ri.rank);
    nodes.insert(ri.node_index);
  }
  if (nodes.size() != 1) return;
  for (int64_t r : candidates) ends_[static_cast<size_t>(r)].dead = true;
}

// Dead processes wait for nothing: their last snapshot is history.  Neither
// does an op every other member completed: the rank's device ran it (the
// others could not finish it otherwise) and its snapshot predates the end.
// Orders every other rank's outstanding ops by entry.
void WaitGraph::drop_dead_ranks_ops() {
  std::vector<Outstanding> kept;
  for (const auto& o : ops_) {
    if (ends_[static_cast<size_t>(o.rank)].dead) continue;
    // A call that had not returned when the rank closed its trace is no stale snapshot,
    // whatever the others did with the op (its host is stuck in it).
    if (!done_by_others(o) || (o.host_pending && snapshot_final(o.rank, o.rec.comm_id)))
      kept.push_back(o);
  }
  ops_ = std::move(kept);
  for (auto& v : by_rank_) v.clear();
  std::vector<int> order(ops_.size());
  for (size_t i = 0; i < ops_.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return ops_[static_cast<size_t>(a)].enter < ops_[static_cast<size_t>(b)].enter;
  });
  for (int i : order) by_rank_[static_cast<size_t>(ops_[static_cast<size_t>(i)].rank)].push_back(i);
}

void WaitGraph::collect_outstanding() {
  by_rank_.resize(set_.ranks.size());
  for (const auto& ri : set_.ranks) {
    if (!ri.has_file) continue;
    for (const auto& rec : ri.pending) {
      const CommInfo* c = set_.comm(rec.comm_id);
      // An op the rank abandoned itself when it gave up waiting is still a wait.
      const bool gave_up = gave_up_[static_cast<size_t>(ri.rank)] &&
                           own_abort_at(ri.rank, rec.comm_id) != trace::kUnknownTime;
      if (c == nullptr || rec.status == static_cast<uint8_t>(OpStatus::kComplete) ||
          (rec.status == static_cast<uint8_t>(OpStatus::kAbandoned) && !gave_up))
        continue;
      Outstanding o;
      o.rank = ri.rank;
      o.comm = c->index;
      o.rec = rec;
      const OpTimes t = op_times(ri, rec);
      if (t.arrival == kNever) continue;
      o.enter = ri.to_job(rec.t_enter_ns);
      if (o.enter == trace::kUnknownTime) o.enter = t.arrival;
      o.started = rec.t_dev_start_ns != trace::kUnknownTime;
      o.host_pending = rec.status == static_cast<uint8_t>(OpStatus::kHostPending);
      const int64_t end = ends_[static_cast<size_t>(ri.rank)].last_seen;
      o.waited_s = end > t.arrival ? static_cast<double>(end - t.arrival) / 1e9 : 0;
      o.group = group_for(o);
      if (o.group < 0) continue;
      ops_.push_back(o);
    }
  }
  by_rank_.resize(set_.ranks.size());
}

// The ops issued on one stream in one ncclGroupStart/End run in one launch: they start
// together (a producer that times them one by one may not say so) and complete together.
void WaitGraph::group_launches() {
  launches_.clear();
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Outstanding& o = ops_[i];
    if (o.rec.group_id != 0)
      launches_[{o.rank, o.rec.group_id, o.rec.stream}].push_back(static_cast<int>(i));
  }
  for (const auto& [key, ops] : launches_) {
    const bool started = std::any_of(ops.begin(), ops.end(),
                                     [&](int j) { return ops_[static_cast<size_t>(j)].started; });
    if (started)
      for (int j : ops) ops_[static_cast<size_t>(j)].started = true;
  }
}

// The other ops of `o`'s launch (group_launches), if it was issued in a group.
const std::vector<int>* WaitGraph::launch_of(const Outstanding& o) const {
  if (o.rec.group_id == 0) return nullptr;
  auto it = launches_.find({o.rank, o.rec.group_id, o.rec.stream});
  return it == launches_.end() ? nullptr : &it->second;
}

int WaitGraph::group_for(const Outstanding& o) {
  const CommInfo& c = set_.comms[static_cast<size_t>(o.comm)];
  Group g;
  g.comm = o.comm;
  g.op = o.rec.op;
  if (trace::is_p2p(static_cast<OpKind>(o.rec.op))) {
    const int me = set_.comm_rank_of(c, o.rank);
    if (me < 0 || o.rec.peer < 0 || o.rec.peer >= c.nranks) return -1;
    const bool send = static_cast<OpKind>(o.rec.op) == OpKind::kSend;
    g.p2p = true;
    g.src = send ? me : o.rec.peer;
    g.dst = send ? o.rec.peer : me;
    g.seq = o.rec.peer_seq;
  } else {
    g.seq = o.rec.seq;
  }
  auto [it, inserted] = group_index_.emplace(std::make_tuple(g.comm, g.p2p, g.src, g.dst, g.seq),
                                             static_cast<int>(groups_.size()));
  if (inserted) groups_.push_back(g);
  return it->second;
}

// The members of `o`'s op, and of the ops issued in one launch with it, that have no
// trace or never entered their op (dead or alive; rank order, once each).
std::vector<int64_t> WaitGraph::absent_from_launch(const Outstanding& o) const {
  std::vector<int64_t> absent;
  auto note = [&](const Outstanding& x) {
    const Group& g = groups_[static_cast<size_t>(x.group)];
    const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
    auto check = [&](int64_t m) {
      if (m < 0 || m == o.rank) return;
      // One that entered and then died had taken part already (its op was set up).
      const bool gone = !set_.ranks[static_cast<size_t>(m)].has_file || !entered(m, g);
      if (gone) absent.push_back(m);
    };
    if (g.p2p) {
      check(c.members[static_cast<size_t>(g.src)]);
      check(c.members[static_cast<size_t>(g.dst)]);
    } else {
      for (int64_t m : c.members) check(m);
    }
  };
  note(o);
  if (const std::vector<int>* launch = launch_of(o)) {
    for (int j : *launch) note(ops_[static_cast<size_t>(j)]);
  }
  std::sort(absent.begin(), absent.end());
  absent.erase(std::unique(absent.begin(), absent.end()), absent.end());
  return absent;
}

bool WaitGraph::entered(int64_t rank, const Group& g) const {
  const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
  if (g.p2p) {
    const int64_t src = c.members[static_cast<size_t>(g.src)];
    const P2PChannel ch = ctx_.groups.p2p_channel(g.comm, g.src, g.dst);
    return static_cast<int64_t>(g.seq) <= (rank == src ? ch.sent : ch.received);
  }
  const RankCommProgress* p = ctx_.groups.progress()[static_cast<size_t>(rank)].find(g.comm);
  return p != nullptr && p->max_seq_entered >= static_cast<int64_t>(g.seq);
}

// Every other traced member of the op finished it: this rank's copy is done
// too as far as the others are concerned (or its snapshot is stale).
bool WaitGraph::done_by_others(const Outstanding& o) const {
  const Group& g = groups_[static_cast<size_t>(o.group)];
  if (g.p2p) return false;
  const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
  bool others = false;
  for (int64_t m : c.members) {
    if (m < 0 || m == o.rank || !set_.ranks[static_cast<size_t>(m)].has_file) continue;
    const RankCommProgress* p = ctx_.groups.progress()[static_cast<size_t>(m)].find(g.comm);
    if (p == nullptr || p->max_seq_completed < static_cast<int64_t>(g.seq)) return false;
    others = true;
  }
  return others;
}

// The peer of a send/recv finished its half: it entered it and has it outstanding no
// more.  This rank's half then waits for nothing of the peer's, only for the ops issued
// with it in one NCCL group (edges()).
bool WaitGraph::peer_done(const Outstanding& o) const {
  const Group& g = groups_[static_cast<size_t>(o.group)];
  if (!g.p2p) return false;
  const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
  const int64_t src = c.members[static_cast<size_t>(g.src)];
  const int64_t peer = o.rank == src ? c.members[static_cast<size_t>(g.dst)] : src;
  return peer >= 0 && set_.ranks[static_cast<size_t>(peer)].has_file &&
         !ends_[static_cast<size_t>(peer)].dead && entered(peer, g) &&
         outstanding_of(peer, o.group) == nullptr;
}

const Outstanding* WaitGraph::outstanding_of(int64_t rank, int group) const {
  for (int i : by_rank_[static_cast<size_t>(rank)]) {
    if (ops_[static_cast<size_t>(i)].group == group) return &ops_[static_cast<size_t>(i)];
  }
  return nullptr;
}

// The rank's last /pending snapshot is its state at the end: it closed its
// trace (normally or on a signal) and did not abort this communicator first, or
// aborted it when it gave up waiting (the snapshot lists what the abort abandoned).
bool WaitGraph::snapshot_final(int64_t rank, uint64_t comm_id) const {
  const RankInfo& ri = set_.ranks[static_cast<size_t>(rank)];
  if (!ri.shutdown) return false;
  if (gave_up_[static_cast<size_t>(rank)]) return true;
  if (aborted(rank, comm_id)) return false;
  for (const auto& rec : ri.pending) {
    if (rec.comm_id == comm_id && rec.status == static_cast<uint8_t>(OpStatus::kAbandoned))
      return false;
  }
  return true;
}

int WaitGraph::add_root(Root r) {
  roots_.push_back(std::move(r));
  return static_cast<int>(roots_.size()) - 1;
}

void WaitGraph::edges() {
  deps_.assign(static_cast<size_t>(node_count()), {});
  root_of_node_.assign(static_cast<size_t>(node_count()), -1);
  cross_stream_only_.assign(ops_.size(), false);
  maybe_stuck_.clear();
  const double min_wait = ctx_.th.hang_min_wait_s;

  // An op waits for its group (and, if its device never started it, its stream), and
  // for the rank's other outstanding ops issued on its stream in the same
  // ncclGroupStart/End: one launch runs them, and they complete together (a send/recv
  // exchange's send, done on the peer, still waits for the receive grouped with it).
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Outstanding& o = ops_[i];
    auto& d = deps_[static_cast<size_t>(op_node(static_cast<int>(i)))];
    if (!done_by_others(o) && !peer_done(o)) d.push_back(group_node(o.group));
    if (!o.started) d.push_back(stream_node(static_cast<int>(i)));
    if (const std::vector<int>* launch = launch_of(o)) {
      for (int j : *launch)
        if (j != static_cast<int>(i)) d.push_back(op_node(j));
    }
    // Started, its peer's half done, nothing beside it outstanding: what holds it is on
    // this rank's side (its GPU, or the data on its way in).
    if (d.empty() && o.started && peer_done(o)) {
      Root r{RootKind::kStall};
      r.rank = o.rank;
      r.op = static_cast<int>(i);
      r.started = true;
      r.weak = !snapshot_final(o.rank, o.rec.comm_id);
      root_of_node_[static_cast<size_t>(op_node(static_cast<int>(i)))] = add_root(r);
    }
  }
  // A stream waits for the rank's earlier outstanding ops: the last one on the
  // same stream for certain; otherwise those on other streams (event waits).
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Outstanding& o = ops_[i];
    if (o.started) continue;
    auto& d = deps_[static_cast<size_t>(stream_node(static_cast<int>(i)))];
    int same = -1;
    std::vector<int> other;
    for (int j : by_rank_[static_cast<size_t>(o.rank)]) {
      const Outstanding& e = ops_[static_cast<size_t>(j)];
      if (j == static_cast<int>(i) || e.enter > o.enter) continue;
      if (e.enter == o.enter && j > static_cast<int>(i)) continue;
      if (done_by_others(e) && e.started) continue;
      if (e.rec.stream == o.rec.stream) {
        same = j;
      } else {
        other.push_back(j);
      }
    }
    if (same >= 0) {
      d.push_back(op_node(same));
    } else if (!other.empty()) {
      for (int j : other) d.push_back(op_node(j));
      cross_stream_only_[i] = true;
    } else if (std::vector<int64_t> absent = absent_from_launch(o);
               o.host_pending && !absent.empty()) {
      // A call can wait inside NCCL for its peers (connections are set up at the first
      // use of a peer or an algorithm, in the call or in ncclGroupEnd, with the peer
      // taking part): one that never returned while a member of its launch never came
      // waits for that member.
      for (int64_t m : absent) d.push_back(rank_node(m));
    } else {
      // A call that never returned never handed the op to its GPU: the host is stuck in
      // it (a rank missing from the op as the others see it).
      Root r{o.host_pending ? RootKind::kMissing : RootKind::kStall};
      r.rank = o.rank;
      r.op = static_cast<int>(i);
      r.in_call = o.host_pending;
      r.weak = !snapshot_final(o.rank, o.rec.comm_id);
      root_of_node_[static_cast<size_t>(stream_node(static_cast<int>(i)))] = add_root(r);
    }
  }
  // A group waits for dead members, members that have not entered it, and
  // members whose device has not started it.
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
    auto& d = deps_[static_cast<size_t>(group_node(static_cast<int>(gi)))];
    if (!g.p2p) {
      const GroupAgg* agg = ctx_.groups.group(g.comm, g.seq);
      if (agg != nullptr && agg->mismatch) {
        Root r{RootKind::kDesync};
        r.group = static_cast<int>(gi);
        root_of_node_[static_cast<size_t>(group_node(static_cast<int>(gi)))] = add_root(r);
        continue;
      }
    }
    std::vector<int64_t> members;
    if (g.p2p) {
      members = {c.members[static_cast<size_t>(g.src)], c.members[static_cast<size_t>(g.dst)]};
    } else {
      members = c.members;
    }
    for (int64_t m : members) {
      if (m < 0 || !set_.ranks[static_cast<size_t>(m)].has_file ||
          ends_[static_cast<size_t>(m)].dead) {
        d.push_back(m < 0 ? -1 : rank_node(m));
        continue;
      }
      if (!entered(m, g)) {
        d.push_back(rank_node(m));
        continue;
      }
      const Outstanding* mo = outstanding_of(m, static_cast<int>(gi));
      if (mo != nullptr && !mo->started)
        d.push_back(stream_node(static_cast<int>(mo - ops_.data())));
    }
    // An unknown member (no trace says who it is) is a root of its own.
    if (std::find(d.begin(), d.end(), -1) != d.end()) {
      d.erase(std::remove(d.begin(), d.end(), -1), d.end());
      Root r{RootKind::kNoTrace};
      r.group = static_cast<int>(gi);
      const int u = unknown_node(static_cast<int>(gi));
      root_of_node_[static_cast<size_t>(u)] = add_root(r);
      d.push_back(u);
    }
    if (d.empty()) {
      // Every member entered and started it.  A member's op issued in one NCCL group with
      // others completes with them: the group may wait for those (its transfer done, the
      // launch not), and is stuck itself only if they lead to nothing else (solve()).
      for (int64_t m : members) {
        const Outstanding* mo = m >= 0 ? outstanding_of(m, static_cast<int>(gi)) : nullptr;
        const std::vector<int>* launch = mo != nullptr ? launch_of(*mo) : nullptr;
        if (launch == nullptr) continue;
        for (int j : *launch)
          if (&ops_[static_cast<size_t>(j)] != mo) d.push_back(op_node(j));
      }
      if (!d.empty()) {
        maybe_stuck_.push_back(static_cast<int>(gi));
        continue;
      }
      Root r{RootKind::kStuck};
      r.group = static_cast<int>(gi);
      root_of_node_[static_cast<size_t>(group_node(static_cast<int>(gi)))] = add_root(r);
    }
  }
  // A rank that has not entered waits for its own stuck ops, if any.
  for (const auto& ri : set_.ranks) {
    const int n = rank_node(ri.rank);
    const RankEnd& e = ends_[static_cast<size_t>(ri.rank)];
    Root r{RootKind::kMissing};
    r.rank = ri.rank;
    if (!ri.has_file) {
      r.kind = RootKind::kNoTrace;
    } else if (e.dead) {
      r.kind = RootKind::kDead;
    } else {
      for (int j : by_rank_[static_cast<size_t>(ri.rank)]) {
        const Outstanding& o = ops_[static_cast<size_t>(j)];
        // A call that never returned holds the rank even when the others completed the op.
        const bool in_call = o.host_pending && snapshot_final(o.rank, o.rec.comm_id);
        if (o.waited_s >= min_wait && (!done_by_others(o) || in_call))
          deps_[static_cast<size_t>(n)].push_back(op_node(j));
      }
      if (!deps_[static_cast<size_t>(n)].empty()) continue;
    }
    root_of_node_[static_cast<size_t>(n)] = add_root(r);
  }
}

// Every node's set of reachable roots, by fixed point over the dependencies.
// Nodes that reach no root only lead into cycles.
void WaitGraph::solve() {
  for (int pass = 0; pass < 2; ++pass) {
    const size_t n = deps_.size();
    reach_.assign(n, {});
    for (size_t v = 0; v < n; ++v) {
      if (root_of_node_[v] >= 0) reach_[v] = {root_of_node_[v]};
    }
    bool changed = true;
    for (size_t iter = 0; changed && iter <= n; ++iter) {
      changed = false;
      for (size_t v = 0; v < n; ++v) {
        if (root_of_node_[v] >= 0) continue;
        for (int d : deps_[v]) {
          for (int r : reach_[static_cast<size_t>(d)]) {
            auto& mine = reach_[v];
            if (std::find(mine.begin(), mine.end(), r) == mine.end() && mine.size() < 16) {
              mine.push_back(r);
              changed = true;
            }
          }
        }
      }
    }
    if (pass == 1) break;
    bool retry = false;
    // A group every member started, waiting only for ops grouped with its members' that
    // lead nowhere but back to it (every transfer of a round stuck): stuck itself.
    for (int gi : maybe_stuck_) {
      const size_t g = static_cast<size_t>(group_node(gi));
      if (!reach_[g].empty()) continue;
      Root r{RootKind::kStuck};
      r.group = gi;
      root_of_node_[g] = add_root(r);
      deps_[g].clear();
      retry = true;
    }
    // A stream waiting only on other streams' ops that lead nowhere but back
    // to it: the event-wait guess was wrong, the stream itself stalled.
    for (size_t i = 0; i < ops_.size(); ++i) {
      const size_t s = static_cast<size_t>(stream_node(static_cast<int>(i)));
      if (cross_stream_only_[i] && reach_[s].empty()) {
        Root r{RootKind::kStall};
        r.rank = ops_[i].rank;
        r.op = static_cast<int>(i);
        root_of_node_[s] = add_root(r);
        deps_[s].clear();
        retry = true;
      }
    }
    if (!retry) break;
  }
}

std::string WaitGraph::where(int group) const {
  const Group& g = groups_[static_cast<size_t>(group)];
  const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
  const std::string op = trace::op_kind_name(static_cast<OpKind>(g.op));
  if (g.p2p) {
    return op + " #" + std::to_string(g.seq) + " from rank " +
           std::to_string(c.members[static_cast<size_t>(g.src)]) + " to rank " +
           std::to_string(c.members[static_cast<size_t>(g.dst)]) + " on " + c.label;
  }
  return op + " #" + std::to_string(g.seq) + " on " + c.label;
}

void WaitGraph::build() {
  classify_ends();
  note_given_up();
  collect_outstanding();
  drop_dead_ranks_ops();  // nobody is dead yet: orders every rank's ops by entry
  decide_deaths();
  drop_dead_ranks_ops();
  group_launches();
  edges();
}

Finding WaitGraph::root_finding(const Root& r, size_t id) const {
  Finding f;
  f.kind = "hang";
  f.severity = 1.0;
  f.cost_s = r.waited_s;
  // The first group (by arrival) waiting on this root: where it shows.
  int first = r.group;
  if (r.kind == RootKind::kStall) first = ops_[static_cast<size_t>(r.op)].group;
  if (first < 0) {
    int64_t best = INT64_MAX;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const auto& reach = reach_[static_cast<size_t>(group_node(static_cast<int>(gi)))];
      if (std::find(reach.begin(), reach.end(), static_cast<int>(id)) == reach.end()) continue;
      for (const auto& o : ops_) {
        if (o.group == static_cast<int>(gi) && o.enter < best) {
          best = o.enter;
          first = static_cast<int>(gi);
        }
      }
    }
  }
  // A call that never returned and held up nobody shows at its own op.
  if (first < 0 && r.kind == RootKind::kMissing && r.in_call)
    first = ops_[static_cast<size_t>(r.op)].group;
  const std::string waiting = count_text(static_cast<int64_t>(r.victims.size()), "rank") +
                              " waited for it up to " + fmt("%.0f", r.waited_s) + " s";
  if (first >= 0) {
    const Group& g = groups_[static_cast<size_t>(first)];
    const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
    f.comm = c.id;
    f.comm_label = c.label;
    f.seq = g.seq;
    f.extra["op"] = trace::op_kind_name(static_cast<OpKind>(g.op));
  }
  const std::string at = first >= 0 ? where(first) : std::string("its next op");
  switch (r.kind) {
    case RootKind::kMissing: {
      f.subkind = "missing_rank";
      f.ranks = {r.rank};
      f.confidence = 0.9;
      if (r.in_call) {
        const Outstanding& o = ops_[static_cast<size_t>(r.op)];
        const bool grouped = (o.rec.flags & trace::kFlagInGroup) != 0;
        f.evidence =
            "Rank " + std::to_string(r.rank) + " entered " + where(o.group) + " " +
            fmt("%.0f", o.waited_s) + " s before the end of its trace" +
            (grouped ? std::string(" inside an NCCL group that was never launched (its "
                                   "ncclGroupEnd did not return, or was not reached)")
                     : std::string(" and its call never returned")) +
            ", so its GPU never got the op (nothing earlier was outstanding on its stream): "
            "its host is stuck inside NCCL (a blocked launch or driver call)" +
            (grouped ? std::string(", in code NCCL called, or in its own code before the "
                                   "group's end; ")
                     : std::string(" or in code NCCL called; ")) +
            (r.victims.empty() ? std::string("the other members were not waiting in a traced "
                                             "call (they completed the op, or wait outside "
                                             "NCCL).")
                               : waiting + ".");
        break;
      }
      std::string state =
          "it is stuck before this call, in its own code (or a call ringside does not trace).";
      const RankInfo& stuck = set_.ranks[static_cast<size_t>(r.rank)];
      for (const auto& rec : stuck.pending) {
        const CommInfo* c = set_.comm(rec.comm_id);
        const int64_t entered_at = stuck.to_job(rec.t_enter_ns);
        if (c == nullptr || rec.status != static_cast<uint8_t>(OpStatus::kHostPending) ||
            trace::is_p2p(static_cast<OpKind>(rec.op)) || entered_at == trace::kUnknownTime)
          continue;
        const int64_t end = ends_[static_cast<size_t>(r.rank)].last_seen;
        if (static_cast<double>(end - entered_at) / 1e9 < ctx_.th.hang_min_wait_s) continue;
        state = "it is stuck inside its call of " +
                std::string(trace::op_kind_name(static_cast<OpKind>(rec.op))) + " #" +
                std::to_string(rec.seq) + " on " + c->label +
                ", which never returned although its peers completed that op.";
        break;
      }
      const RankInfo& ri = set_.ranks[static_cast<size_t>(r.rank)];
      if (ri.shutdown && ri.last_signal == 0) {
        state =
            "instead its process exited normally (its trace was closed without a signal): "
            "it ran fewer collectives than its peers (uneven loop bounds, an early return).";
      }
      f.evidence = "Rank " + std::to_string(r.rank) + " never entered " + at + "; " + waiting +
                   ". " +
                   (ri.shutdown && ri.last_signal == 0
                        ? std::string("It was alive until then: ")
                        : std::string("Its trace goes on to the end (the process was alive): ")) +
                   state;
      break;
    }
    case RootKind::kNoTrace:
      f.subkind = "missing_rank";
      if (r.rank >= 0) f.ranks = {r.rank};
      f.confidence = 0.7;
      f.evidence = (r.rank >= 0 ? "Rank " + std::to_string(r.rank) : std::string("A member")) +
                   " never entered " + at + "; " + waiting +
                   ". There is no trace for it, so whether it died is unknown.";
      break;
    case RootKind::kDead: {
      f.subkind = "dead_rank";
      f.ranks = {r.rank};
      f.confidence = 0.9;
      const RankEnd& e = ends_[static_cast<size_t>(r.rank)];
      int64_t latest = kNever;
      std::vector<int64_t> signalled;
      for (const auto& ri : set_.ranks) {
        if (!ri.has_file || ri.rank == r.rank) continue;
        latest = std::max(latest, ends_[static_cast<size_t>(ri.rank)].last_seen);
        if (ri.last_signal != 0) signalled.push_back(ri.rank);
      }
      const int64_t sig = set_.ranks[static_cast<size_t>(r.rank)].last_signal;
      std::string how =
          fatal_signal(sig) ? "the probe recorded signal " + std::to_string(sig) + " (" +
                                  signal_name(sig) + ") before the process ended"
          : e.last_seen == kNever || latest == kNever
              ? std::string("its trace holds nothing after its start and no shutdown record")
              : "its trace ends " + fmt("%.0f", static_cast<double>(latest - e.last_seen) / 1e9) +
                    " s before the others' with no shutdown record";
      if (!signalled.empty()) {
        how += "; " + std::to_string(signalled.size()) +
               " other ranks recorded the signal that ended them (the launcher tore the job "
               "down after it died)";
      }
      const std::string then =
          !r.victims.empty() ? " It never entered " + at + "; " + waiting + "."
          : first >= 0       ? " The others were waiting for it in " + at + " when they ended."
                             : std::string();
      f.evidence = "Rank " + std::to_string(r.rank) +
                   (fatal_signal(sig) ? std::string(" crashed: ")
                                      : std::string(" died (crashed or killed: abort, segfault, "
                                                    "OOM kill): ")) +
                   how + "." + then;
      break;
    }
    case RootKind::kStall: {
      const Outstanding& o = ops_[static_cast<size_t>(r.op)];
      f.subkind = "gpu_stall";
      f.ranks = {r.rank};
      f.confidence = 0.85;
      if (r.weak) f.confidence = 0.5;
      f.evidence =
          "On rank " + std::to_string(r.rank) +
          (r.started ? " the GPU started " + at + " and never completed it (entered " +
                           fmt("%.0f", o.waited_s) +
                           " s before the end of its trace), though its peer completed its "
                           "half and nothing issued beside it is outstanding; " +
                           waiting + ": a stalled GPU or stream, or data lost on its way."
                     : " the GPU never started " + at + " (enqueued " + fmt("%.0f", o.waited_s) +
                           " s before the end of its trace, nothing earlier outstanding on its "
                           "streams); " +
                           waiting + ": a stalled GPU or stream.") +
          (r.weak ? std::string(" Its last snapshot may predate the end (the process "
                                "was killed before its final flush, or the "
                                "communicator was aborted).")
                  : std::string());
      break;
    }
    case RootKind::kStuck: {
      const Group& g = groups_[static_cast<size_t>(r.group)];
      const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
      f.subkind = "all_stuck";
      if (g.p2p) {
        f.ranks = {c.members[static_cast<size_t>(g.src)], c.members[static_cast<size_t>(g.dst)]};
      } else {
        for (int64_t m : c.members)
          if (m >= 0) f.ranks.push_back(m);
      }
      std::sort(f.ranks.begin(), f.ranks.end());
      f.confidence = 0.85;
      f.evidence = "Every member entered " + at +
                   " and its GPU started it, but none completed it in " + fmt("%.0f", r.waited_s) +
                   " s" + std::string(kStuckCause);
      for (int ni : c.nodes) f.nodes.push_back(set_.nodes[static_cast<size_t>(ni)]);
      break;
    }
    case RootKind::kCycle:
    case RootKind::kDesync:
      break;
  }
  if (f.nodes.empty() && r.kind != RootKind::kStuck) f.nodes = ctx_.nodes_of(f.ranks);
  f.extra["waited_s"] = r.waited_s;
  return f;
}

// Says which other ranks gave up waiting (the finding's own ranks may have too, at their
// own timeout).  On a finding whose ranks and evidence are final (after merging).
void WaitGraph::note_gave_up(Finding& f) const {
  std::vector<int64_t> gave_up;
  for (size_t k = 0; k < gave_up_.size(); ++k) {
    const auto rank = static_cast<int64_t>(k);
    if (gave_up_[k] && std::find(f.ranks.begin(), f.ranks.end(), rank) == f.ranks.end())
      gave_up.push_back(rank);
  }
  if (gave_up.empty()) return;
  f.evidence += " " + std::string(gave_up.size() == 1 ? "Rank " : "Ranks ") + list_ranks(gave_up) +
                " then gave up waiting: they aborted their communicators after waiting " +
                fmt("%.0f", ctx_.th.hang_min_wait_s) +
                " s or more, as a framework's watchdog does at its timeout, and their "
                "processes ended; that answers the hang, it did not cause it.";
  f.extra["gave_up_ranks"] = gave_up;
}

void WaitGraph::report(std::vector<Finding>& out) {
  const size_t first_new = out.size();  // the findings before are other detectors'
  const double min_wait = ctx_.th.hang_min_wait_s;
  // Victims: live ranks with an op stuck long enough, by the roots it leads to.
  std::vector<std::set<int>> blocked_by(roots_.size() + 1);
  std::vector<std::map<int, std::pair<std::set<int64_t>, double>>> where_by_root(roots_.size() + 1);
  const int cycle_id = static_cast<int>(roots_.size());
  std::set<int64_t> cycle_ranks;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Outstanding& o = ops_[i];
    if (o.waited_s < min_wait) continue;
    const auto& reach = reach_[static_cast<size_t>(op_node(static_cast<int>(i)))];
    if (deps_[static_cast<size_t>(op_node(static_cast<int>(i)))].empty()) continue;
    std::vector<int> ids = reach;
    // Firm roots win over roots read from a snapshot that may be stale.
    const bool firm = std::any_of(ids.begin(), ids.end(),
                                  [&](int id) { return !roots_[static_cast<size_t>(id)].weak; });
    if (firm) {
      std::erase_if(ids, [&](int id) { return roots_[static_cast<size_t>(id)].weak; });
    }
    if (ids.empty()) {
      ids = {cycle_id};
      cycle_ranks.insert(o.rank);
    }
    for (int id : ids) {
      if (id < cycle_id) {
        Root& r = roots_[static_cast<size_t>(id)];
        if (r.rank == o.rank) continue;  // a root is not its own victim
        r.victims.insert(o.rank);
        r.waited_s = std::max(r.waited_s, o.waited_s);
      }
      // Each victim is listed once per root, at its earliest stuck op.
      auto& w = where_by_root[static_cast<size_t>(id)];
      bool listed = false;
      for (const auto& [g, v] : w) listed = listed || v.first.count(o.rank);
      if (listed) continue;
      auto& entry = w[o.group];
      entry.first.insert(o.rank);
      entry.second = std::max(entry.second, o.waited_s);
    }
  }
  auto consequences = [&](int id, int64_t except) {
    std::vector<Consequence> list;
    for (const auto& [gi, v] : where_by_root[static_cast<size_t>(id)]) {
      const Group& g = groups_[static_cast<size_t>(gi)];
      const CommInfo& c = set_.comms[static_cast<size_t>(g.comm)];
      Consequence q;
      for (int64_t r : v.first)
        if (r != except) q.ranks.push_back(r);
      if (q.ranks.empty()) continue;
      q.comm = c.id;
      q.comm_label = c.label;
      q.seq = g.seq;
      q.op = trace::op_kind_name(static_cast<OpKind>(g.op));
      q.waited_s = v.second;
      list.push_back(std::move(q));
    }
    std::sort(list.begin(), list.end(),
              [](const Consequence& a, const Consequence& b) { return a.waited_s > b.waited_s; });
    return list;
  };

  // Findings: roots that hold someone up, plus dead processes nobody waited on
  // yet (a job torn down right after a crash).  Roots of one kind on the same
  // op merge into one finding.
  std::map<std::tuple<int, uint64_t, uint64_t>, size_t> merged;
  for (size_t id = 0; id < roots_.size(); ++id) {
    const Root& r = roots_[id];
    // Dead processes, and calls that never returned, are hangs also when nobody waited
    // for them in a traced op (a job torn down right after a crash; the others waiting
    // outside NCCL, in an MPI barrier).
    const bool lone =
        r.victims.empty() &&
        (r.kind == RootKind::kDead ||
         (r.in_call && !r.weak && ops_[static_cast<size_t>(r.op)].waited_s >= min_wait));
    if (r.victims.empty() && !lone) continue;
    if (r.kind == RootKind::kDesync) {
      const Group& g = groups_[static_cast<size_t>(r.group)];
      const uint64_t cid = set_.comms[static_cast<size_t>(g.comm)].id;
      for (auto& f : out) {
        if (f.kind == "desync" && f.comm == cid) {
          add_consequences(f.consequences, consequences(static_cast<int>(id), -1));
          drop_ranks(f.consequences, f.ranks);
          f.cost_s = std::max(f.cost_s, r.waited_s);
        }
      }
      continue;
    }
    Finding f = root_finding(r, id);
    f.consequences = consequences(static_cast<int>(id), r.rank);
    // Ranks missing from (or dead before) the same op are one finding; so are the stuck
    // send/recv pairs of one round of an exchange (a ring's every transfer).
    const bool stuck_pair = r.kind == RootKind::kStuck && groups_[static_cast<size_t>(r.group)].p2p;
    if ((r.kind == RootKind::kMissing || r.kind == RootKind::kNoTrace ||
         r.kind == RootKind::kDead || stuck_pair) &&
        f.comm) {
      const auto key = std::make_tuple(static_cast<int>(r.kind), *f.comm, f.seq.value_or(0));
      auto it = merged.find(key);
      if (it != merged.end()) {
        Finding& into = out[it->second];
        into.ranks.insert(into.ranks.end(), f.ranks.begin(), f.ranks.end());
        std::sort(into.ranks.begin(), into.ranks.end());
        into.ranks.erase(std::unique(into.ranks.begin(), into.ranks.end()), into.ranks.end());
        if (stuck_pair) {
          // Same communicator, so the same nodes (a stuck group names its comm's).
          const int pairs = into.extra.value("stuck_pairs", 1) + 1;
          into.extra["stuck_pairs"] = pairs;
          into.evidence = f.evidence.substr(0, f.evidence.size() - kStuckCause.size()) +
                          ", and so are " + std::to_string(pairs - 1) +
                          " more send/recv pairs of that round (every rank listed): the "
                          "transfers themselves are stuck (network, NCCL or driver), not a "
                          "missing rank.";
        } else {
          into.nodes = ctx_.nodes_of(into.ranks);
        }
        add_consequences(into.consequences, f.consequences);
        drop_ranks(into.consequences, into.ranks);
        continue;
      }
      merged[key] = out.size();
    }
    drop_ranks(f.consequences, f.ranks);
    f.next_command = next_command_for_hang(ctx_, f);
    out.push_back(std::move(f));
  }
  if (!cycle_ranks.empty()) {
    Finding f;
    f.kind = "hang";
    f.subkind = "cycle";
    f.ranks.assign(cycle_ranks.begin(), cycle_ranks.end());
    f.nodes = ctx_.nodes_of(f.ranks);
    f.severity = 1.0;
    f.confidence = 0.75;
    f.consequences = consequences(cycle_id, -1);
    double waited = 0;
    for (const auto& q : f.consequences) waited = std::max(waited, q.waited_s);
    f.cost_s = waited;
    f.extra["waited_s"] = waited;
    f.evidence = "Ranks " + list_ranks(f.ranks) +
                 " wait for each other: each is stuck in an op that another of them has not "
                 "entered, on different communicators or streams (the ranks issue their "
                 "collectives in different orders).";
    f.next_command = next_command_for_hang(ctx_, f);
    out.push_back(std::move(f));
  }
  for (size_t i = first_new; i < out.size(); ++i) {
    if (out[i].subkind != "cycle") note_gave_up(out[i]);
  }
}

}  // namespace

void detect_hangs(const Context& ctx, std::vector<Finding>& out, std::vector<std::string>& notes) {
  WaitGraph graph(ctx);
  graph.build();
  graph.solve();
  graph.report(out);
  if (const std::vector<int64_t> quiet = graph.quiet_ends(); !quiet.empty()) {
    const bool one = quiet.size() == 1;
    std::string who = one ? ctx.describe_rank(quiet[0]) : "ranks";
    for (size_t i = 0; !one && i < quiet.size(); ++i)
      who += (i ? ", " : " ") + std::to_string(quiet[i]);
    notes.push_back(
        who + (one ? " has no exit record in its trace" : " have no exit records in their traces") +
        ", though no collective waited for " + (one ? "it" : "them") +
        " and the other ranks ended normally: " + (one ? "the process" : "each process") +
        " ended without running its exit handlers (os._exit, or a kill or crash after "
        "its last collective); its exit code tells which");
  }
  // No rank closed its trace: the whole job was killed without warning (SIGKILL,
  // a launcher or node failure) or the files were cut.  Nothing to blame a rank
  // for unless the graph found a root, but the end was not normal.
  int traced = 0, closed = 0;
  for (const auto& ri : ctx.set.ranks) {
    traced += ri.has_file;
    closed += ri.has_file && ri.shutdown;
  }
  if (traced > 0 && closed == 0 && !any_stopped_the_job(out) && !ctx.th.live) {
    Finding f;
    f.kind = "abnormal_end";
    f.subkind = "killed";
    f.severity = 0.5;
    f.confidence = 0.8;
    f.evidence = "None of the " + std::to_string(traced) +
                 " traces has a shutdown record: the whole job was killed without a signal the "
                 "probe could see (SIGKILL, OOM killer, node or launcher failure) or the files "
                 "were cut. No op was outstanding long enough to blame a rank.";
    f.next_command = next_command_for_abnormal_end(ctx);
    out.push_back(std::move(f));
  }
}

}  // namespace ringside::analysis
