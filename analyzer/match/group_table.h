// Pass 1 over the ops: matches every rank's ops across ranks by (comm, seq)
// for collectives and by (comm, sender, receiver, per-peer seq) for send/recv,
// reading one rank file at a time.  Per matched op only an aggregate is kept
// (arrivals, ends, compute gaps, the call's signature), so memory grows with
// the number of distinct ops of the job, not with ranks x ops.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "load/mapped_array.h"
#include "load/rank_comms.h"
#include "load/trace_set.h"
#include "match/own_compute.h"
#include "parallel/byte_stream.h"
#include "ringside/status.h"
#include "ringside/trace_reader.h"

namespace ringside::analysis {

// Sums of squares of ns are kept exact: partial tables of a parallel analysis add up to
// the same bits in any grouping (parallel/process_group.h).  Aligned to 8 bytes, not the
// 16 of __int128, so that GroupAgg takes 136 bytes, not 144: the per-op table is most of
// the analysis's memory.
struct [[gnu::packed, gnu::aligned(8)]] ExactSum {
  __extension__ __int128 value = 0;

  static ExactSum square(int64_t x) {
    return {__extension__ static_cast<__int128>(x) * x};
  }
  ExactSum& operator+=(const ExactSum& o) {
    value += o.value;
    return *this;
  }
  explicit operator double() const {
    return static_cast<double>(value);
  }
};

// One reading of the members' own compute before an op (match/own_compute.h), over the
// members: summed, the smallest (the communicator's own, match/sibling_lateness.h), the
// largest, and the sum of squares.
struct GapStats {
  int64_t sum = 0;
  int64_t min = INT64_MAX;
  int64_t max = kNever;
  ExactSum sq_sum{};

  void add(int64_t x) {
    sum += x;
    min = std::min(min, x);
    max = std::max(max, x);
    sq_sum += ExactSum::square(x);
  }
  void merge(const GapStats& o) {
    sum += o.sum;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    sq_sum += o.sq_sum;
  }
};
// Readings 1 to kReadings - 1 of an op whose members' readings differ.
using OtherReadings = std::array<GapStats, kReadings - 1>;

struct GroupAgg {
  // Ordered so that what the lateness pass reads of each op (match/rank_stats.h: arrivals,
  // counts, flags, reading 0's summed, smallest and largest gap) lies in the first 80
  // bytes: two cache lines, since the table is mostly larger than a core's cache.
  int64_t max_arrival = kNever;
  int64_t second_arrival = kNever;
  int64_t min_arrival = INT64_MAX;
  int32_t last_rank = -1;
  int32_t entered = 0;
  int32_t completed = 0;
  int32_t gaps = 0;
  // Where readings 1 and on are kept (CommGroups::other_readings), once a member's
  // differed from its reading 0; -1 while none did: then they are reading 0's.  Most ops
  // have a single stream's ops around them, where every reading is the same.
  int32_t other_readings = -1;
  uint8_t op = 0, dtype = 0;
  bool has_signature = false;
  bool mismatch = false;
  // A member started another op while in this one: it ran alongside the compute
  // (match/own_compute.h).
  bool ran_alongside = false;
  // A member ran another op of its own on another stream while this one was in
  // flight: its transfer time includes that contention, so it does not time the link.
  bool contended = false;
  // A member's readings are its compute since it last left a collective that held it up
  // (OwnCompute::since_held): they judge lateness, but say nothing of how the compute
  // before one op spreads.
  bool since_held = false;
  // Members whose gap was several stretches of compute (OwnCompute::split).
  int32_t split = 0;
  // Members' own compute before the op, reading 0 (match/own_compute.h); the other
  // readings: CommGroups::reading().
  GapStats gap;
  int64_t min_end = INT64_MAX;
  int64_t max_end = kNever;
  uint64_t count = 0;  // signature of the first member seen
  uint64_t bytes = 0;
  int32_t not_started = 0;  // entered on the host, never started on the device
  int32_t root = -1;

  bool complete(int present) const { return entered == present && completed == present; }
  int64_t transfer() const {
    return min_end == INT64_MAX || max_arrival == kNever
               ? -1
               : std::max<int64_t>(0, min_end - max_arrival);
  }
};
// What the per-op table costs per distinct op, plus 120 bytes (OtherReadings) for an op
// whose members' readings differ (docs/analyzer.md, "Bounded memory").
static_assert(sizeof(GroupAgg) == 136 && sizeof(OtherReadings) == 120);
static_assert(offsetof(GroupAgg, gap) + offsetof(GapStats, sq_sum) <= 80);

struct CommGroups {
  // The per-op table: most of an analysis's memory, and what grows with the job's length
  // (in a file where the analysis spills, load/mapped_array.h).
  MappedArray<GroupAgg> groups;               // index = seq - first_seq
  MappedArray<OtherReadings> other_readings;  // GroupAgg::other_readings
  // Reading k of group g's members' own compute.
  const GapStats& reading(const GroupAgg& g, int k) const {
    return k == 0 || g.other_readings < 0
               ? g.gap
               : other_readings[static_cast<size_t>(g.other_readings)][static_cast<size_t>(k - 1)];
  }
  // Readings 1 and on of group g, kept apart from its reading 0 from now on: set to
  // reading 0's when they were not yet (every member so far had one value in every
  // reading).
  OtherReadings& separate_readings(GroupAgg& g);
  uint64_t first_seq = 0;  // where a window (load/op_window.h) begins, else 0
  uint64_t end_seq() const { return first_seq + groups.size(); }
  uint64_t collective_ops = 0;  // records of collectives seen on this comm (all ranks)
  uint64_t p2p_ops = 0;         // records of send/recv
  // Its collectives, and those during which a member started an op on another
  // stream (match/own_compute.h); counted by finalize().
  uint64_t timed_groups = 0;
  uint64_t alongside_groups = 0;
  // Its ops run alongside the compute: more of them showed it than coincidence
  // explains, so all are taken to (a member that waited in one did not necessarily
  // start another op meanwhile); or those of a communicator of the same role and size
  // did.
  bool alongside = false;
};

// How far the two sides of one send/recv channel (comm, sender, receiver) got:
// the highest per-peer sequence number each side entered, -1 if none.
struct P2PChannel {
  int64_t sent = -1;
  int64_t received = -1;
};

// Per (rank, comm): how far the rank got.
struct RankCommProgress {
  int comm = -1;
  uint64_t ops = 0;
  int64_t max_seq_entered = -1;
  int64_t max_seq_completed = -1;
  int64_t last_arrival = kNever;
};

struct RankProgress {
  std::vector<RankCommProgress> comms;
  int64_t first_arrival = INT64_MAX;
  int64_t last_activity = kNever;  // latest arrival or end seen
  uint64_t ops_read = 0;
  RankCommProgress& at(int comm);
  const RankCommProgress* find(int comm) const;
};

// At most kMaxSamples values: those with the smallest keys (a hash of what was measured),
// so that the sample does not depend on the order values arrive in, and partial samples
// (parallel/process_group.h) merge into the one a single pass keeps.
class KeyedSample {
 public:
  void add(uint64_t key, float x);
  void merge(const KeyedSample& o);
  // The values in key order.
  std::vector<float> values() const;
  void save(ByteWriter& w) const { w.put_vector(heap_); }
  void load(ByteReader& r) { heap_ = r.get_vector<std::pair<uint64_t, float>>(); }

 private:
  std::vector<std::pair<uint64_t, float>> heap_;  // max-heap on (key, value)
};

// Send/recv matched pairs whose transfer could be timed (the receiver was waiting
// when the sender arrived), aggregated per (sender rank, receiver rank).
struct P2PStats {
  int64_t src = -1, dst = -1;
  uint64_t count = 0;
  double bytes = 0;
  double transfer_ns = 0;    // end minus later arrival, summed (exact: sums of integers)
  std::vector<float> busbw;  // GB/s, a bounded sample (from `sample` by finalize())
  KeyedSample sample;
};

// Bandwidth observations of one comm for one (op, size bucket).
struct CommLinkStats {
  int comm = -1;
  uint8_t op = 0;
  int size_log2 = 0;
  uint64_t count = 0;
  double bytes = 0;
  double transfer_ns = 0;
  std::vector<float> busbw;
};

class GroupTable {
 public:
  // `spill_dir`: where the per-op table may be kept in files (load/mapped_array.h; "":
  // memory).
  explicit GroupTable(const TraceSet& set, const std::string& spill_dir = {});

  // Adds one rank's ops (its rows from first_row on, load/window_rows.h) and its /pending
  // snapshot to the table; a rank whose ops fail validation adds nothing and returns the error.
  // `held`: receives the rank's own compute, for the passes after (own_compute below).
  // `valid`: rows[0, valid) are known to pass trace::validate_op (load/window_rows.h).
  Status add_rank(const RankInfo& rank, std::span<const trace::OpRecord> rows,
                  HeldOwnCompute* held = nullptr, size_t valid = 0);
  // Computes per-comm bandwidth statistics; call once after every add_rank.
  void finalize();
  // Whether a collective ran alongside the compute: a member showed it, or its
  // communicator's ops do (false for send/recv and unknown ops).  When none did, it is kHeld
  // for every op.
  Alongside ran_alongside(const trace::OpRecord& op) const;
  // When a rooted collective ended on its last member (trace::is_rooted; kNever for other
  // ops, and for one not every member completed).
  int64_t last_end(const trace::OpRecord& op) const;
  // When a collective ran alongside, or a rooted one ended on its members apart, the members'
  // own compute before each op is measured again with that known (match/own_compute.h):
  // reset_gaps(), then add_gaps() per rank.
  bool measures_again() const { return any_alongside_ || any_rooted_apart_; }
  // Of the communicators of slice `part` of `parts` only (a parallel analysis: below).
  void reset_gaps(size_t part = 0, size_t parts = 1);
  Status add_gaps(const RankInfo& rank, std::span<const trace::OpRecord> rows,
                  HeldOwnCompute* held = nullptr);
  // The rank's own compute measured with what ran_alongside() and last_end() know (call after
  // finalize()): `held`'s when it was measured so, or measured knowing nothing when there is
  // nothing to measure again for (which measures the same); else measured now, and kept in
  // `held` for a later pass.
  const OwnCompute& own_compute(const RankInfo& rank, std::span<const trace::OpRecord> rows,
                                HeldOwnCompute& held) const;

  // A pass that writes the table (matching, compute attribution) goes over the ranks of
  // `share` in order: once it is past a communicator's last member in `share`,
  // passed(rank) pages its per-op table out (load/mapped_array.h), written back and
  // dropped, so that such a pass holds the tables of the communicators it is inside, not
  // the whole table, and leaves none of it unwritten (pages a memory limit could not drop).
  // A pass that only reads leaves clean pages, which a limit drops unaided.  Nothing where
  // the table is in memory.
  void plan_page_out(std::span<const int64_t> share);
  void passed(int64_t rank) const;
  const TraceSet& set() const { return set_; }
  const std::vector<CommGroups>& comms() const { return comms_; }
  const GroupAgg* group(int comm, uint64_t seq) const {
    const CommGroups& cg = comms_[static_cast<size_t>(comm)];
    return seq >= cg.first_seq && seq < cg.end_seq() ? &cg.groups[seq - cg.first_seq] : nullptr;
  }
  const std::vector<RankProgress>& progress() const { return progress_; }
  const std::vector<P2PStats>& p2p() const { return p2p_done_; }
  const std::vector<CommLinkStats>& comm_links() const { return links_; }
  uint64_t records() const { return records_; }
  // (comm, seq) of groups whose members called different things.
  const std::vector<std::pair<int, uint64_t>>& mismatches() const { return mismatches_; }
  size_t unmatched_p2p() const { return p2p_open_.size(); }
  // The channel from comm rank `src` to comm rank `dst` of comm index `comm`.
  P2PChannel p2p_channel(int comm, int32_t src, int32_t dst) const;

  // A parallel analysis (parallel/process_group.h; match/group_table_merge.cpp): each
  // process adds its share of the ranks, in rank order, and saves what that added; every
  // process then merges all processes' partials, in process order, into a fresh table
  // and holds the one a single pass over every rank builds.  Likewise for add_gaps.
  // A partial is exchanged in `parts` pieces (piece `part`: the groups of a slice of the
  // communicators; the last also the rest), so that a process holds one piece of another
  // process's partial at a time, not the whole.
  void save_partial(ByteWriter& w, size_t part, size_t parts) const;
  void merge_partial(ByteReader& r, size_t part, size_t parts);
  void save_gaps(ByteWriter& w, size_t part, size_t parts) const;
  void merge_gaps(ByteReader& r, size_t part, size_t parts);

 private:
  struct P2PKey {
    int comm;
    int32_t src, dst;
    uint32_t peer_seq;
    bool operator==(const P2PKey&) const = default;
  };
  struct P2PKeyHash {
    size_t operator()(const P2PKey& k) const {
      uint64_t h = static_cast<uint64_t>(k.comm) * 0x9e3779b97f4a7c15ull;
      h ^= (static_cast<uint64_t>(static_cast<uint32_t>(k.src)) << 32 |
            static_cast<uint32_t>(k.dst)) *
           0xbf58476d1ce4e5b9ull;
      return h ^ (k.peer_seq * 0x94d049bb133111ebull);
    }
  };
  struct P2PHalf {
    int64_t send_arrival = kNever, send_end = kNever, recv_arrival = kNever, recv_end = kNever;
    uint64_t bytes = 0;
    bool contended = false;
  };

  // What the rank's own timeline shows about one of its ops (match/own_compute.h).
  struct OwnView {
    const ComputeReadings* before = nullptr;  // null: no reading
    bool contended = false;
    bool started_another = false;
    bool split = false;
    bool since_held = false;
    bool pending = false;  // outstanding at the last flush, not in /ops
  };
  // `in`: the op's communicator (a comm of the rank's: RankComms).
  void add_op(const RankInfo& rank, RankProgress& prog, const trace::OpRecord& op,
              RankComms::Entry in, const OwnView& own);
  static void add_gap(CommGroups& cg, GroupAgg& g, const ComputeReadings& before, bool split,
                      bool since_held);
  // Merges `o`'s gaps, whose readings 1 and on `o_other` holds, into `g`'s.
  static void merge_gaps(CommGroups& cg, GroupAgg& g, const GroupAgg& o,
                         const std::vector<OtherReadings>& o_other);
  void merge_group(int comm, uint64_t seq, GroupAgg& g, const GroupAgg& o,
                   const std::vector<OtherReadings>& o_other);
  // Takes the first signature seen for group (comm, seq); flags the group once
  // (mismatches_) when another differs from it, or `mismatched` says one did.
  void note_signature(GroupAgg& g, int comm, uint64_t seq, uint8_t op, uint8_t dtype,
                      uint64_t count, uint64_t bytes, int32_t root, bool mismatched);
  // A send/recv pair whose both halves arrived: timed into p2p_pairs_ when it can be.
  void settle_p2p(const P2PKey& key, const P2PHalf& h);
  void add_p2p(const RankInfo& rank, const CommInfo& comm, const trace::OpRecord& op,
               const OpTimes& t, bool contended);

  const TraceSet& set_;
  std::vector<CommGroups> comms_;
  bool spills_ = false;  // the table may be in files (a spill directory was given)
  // By rank: the communicators whose tables are paged out once a pass is past it.
  std::vector<std::vector<int>> page_out_after_;
  // Pages out the tables of communicators [first, last) (merges: parallel/process_group.h).
  void page_out(size_t first, size_t last) const;
  std::vector<RankProgress> progress_;
  std::unordered_map<P2PKey, P2PHalf, P2PKeyHash> p2p_open_;
  std::map<std::pair<int64_t, int64_t>, P2PStats> p2p_pairs_;
  std::vector<P2PStats> p2p_done_;
  std::vector<CommLinkStats> links_;
  std::vector<std::pair<int, uint64_t>> mismatches_;
  std::map<std::tuple<int, int32_t, int32_t>, P2PChannel> channels_;
  bool any_alongside_ = false;
  bool any_rooted_apart_ = false;  // a rooted collective ended on its members apart
  uint64_t records_ = 0;
};

// Keeps at most kMax values, replacing by stride once full (deterministic).
void bounded_push(std::vector<float>& v, float x, uint64_t seen);

}  // namespace ringside::analysis
