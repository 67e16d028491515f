// A rank's own compute before each of its ops, from its ops alone.
//
// The trace holds communication ops, not kernels, so the time a rank computed
// before an op is inferred from the gap since an earlier op.  With one stream
// that is exact: the previous op ended and the rank computed until it arrived.
// With several streams, what the trace cannot say is which ops held the rank up
// and which ran while it computed:
//  - ops on other streams inside the gap may have held it up (a tensor-parallel
//    all-reduce whose result the next layer needs) or run alongside (a gradient
//    bucket);
//  - the previous op on the same stream may have held it up, or run alongside:
//    then the work before this op began when that op was issued, and the gap since
//    its end misses the compute done meanwhile, by as much as the rank waited in it
//    (a rank that waited in a bucket's all-reduce for a late peer looks early at
//    the next bucket, and so the late peer looks late, even when it was late only
//    because it had waited in a tensor-parallel all-reduce).
// So each op gets several readings, one per way the trace can be read, and a rank
// is judged late at an op only when it is late under every reading that applies
// (rank_stats.h): a reading that is wrong for this op can hide lateness but cannot
// make it up.
//
// Whether an op ran alongside the compute is measured, not assumed: a rank cannot
// start an op on another stream while an op holds it up, so an op during which the
// rank started another one did not hold it, and neither did the same collective on
// its other members (they run the same code): GroupTable marks the collective, and
// the communicator when enough of its collectives show it.  A collective of such a
// communicator that showed nothing may still have held the ranks up (the optimizer
// waits for the last gradient bucket of a step), and one of a communicator that
// showed it too rarely to tell may have run alongside (a bucket's all-reduce shows it
// only when the rank has another op to start while it is in flight): the op after
// either on the same stream has no reading, since where its compute began is unknown.  Nor has an
// op that, after one that ran alongside, started only when its stream was free (the compute before
// it ended earlier, by an unknown amount), or that follows such an op; nor one before which the
// rank created a communicator (set-up: a unique id made and shared, ncclCommInitRank waiting for
// the other members).  An op without a reading on one member is not judged on any
// (GroupAgg::gaps).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "load/trace_set.h"
#include "ringside/trace_schema.h"

namespace ringside::analysis {

inline constexpr int64_t kNever = INT64_MIN;

// Times in this module are job times (clock-aligned ns).
struct OpTimes {
  int64_t arrival = kNever;    // device start, else host enter
  int64_t end = kNever;        // device end, else host exit; kNever if incomplete
  bool device_started = true;  // false: enqueued on the host, device never started
};
OpTimes op_times(const RankInfo& rank, const trace::OpRecord& op);

// One rank's ops as time intervals per stream, to attribute its time: how long
// it was inside ops on streams other than a given one during an interval.  An op
// whose interval meets ops on other streams contends with them for the links.
class OwnTimeline {
 public:
  struct Interval {
    int64_t begin, end;
    uint64_t stream;
  };
  explicit OwnTimeline(std::vector<Interval> ops);
  // Time in [from, to) covered by ops on streams other than `stream`, ns.
  int64_t other_busy(uint64_t stream, int64_t from, int64_t to) const;
  // Time in [from, to) covered by ops on any stream, ns.
  int64_t busy(int64_t from, int64_t to) const;

 private:
  struct Merged {
    uint64_t stream;
    std::vector<int64_t> begin, end,
        before;  // merged intervals; `before`: covered time before each
    // Where the last lookups of a `from` and a `to` ended: OwnCompute asks about times in
    // order of arrival, mostly a few intervals on from the last ones.
    mutable size_t from_hint = 0, to_hint = 0;
  };
  static int64_t covered(const Merged& m, int64_t from, int64_t to);
  // How many intervals of `m` begin at or before `t`, searched from `hint` first.
  static size_t begun_by(const Merged& m, int64_t t, size_t& hint);
  std::vector<Merged> by_stream_;
  Merged all_{};
};

// The readings of a rank's own compute before one op, ns, where "held" is the time
// inside its ops on other streams that did not run alongside:
//   0  since the previous op on its stream ended, minus held time
//   1  since the previous op on its stream ended, minus time inside collectives on
//      other streams whose communicator never showed one running alongside: every
//      op that may have run alongside did (send/recv, which is not measured,
//      included).  A communicator of which no collective ever let a member start
//      another op did not run beside the compute: the time in it held the rank up.
//   2  since the previous op on its stream ended, on every member when it was a
//      rooted collective that ended later on some, minus time inside every op on
//      another stream: each held the rank up.  A rooted collective (a broadcast, a
//      reduce) ends on some members before the others, who may then wait for the rest
//      in a synchronization the trace does not see (an MPI barrier between benchmark
//      rounds, a host-side exchange of the result): the earlier a member's end in the
//      chain, the longer that wait, which the other readings take for its compute.
//   3  when the previous op on its stream was seen to run alongside, since it
//      started, minus held time; else reading 0
// Reading 0 is the primary one.
inline constexpr int kReadings = 4;
using ComputeReadings = std::array<int64_t, kReadings>;
// Whether some reading differs from reading 0 (most ops: one stream's ops around them,
// where every reading is the same).
inline bool readings_differ(const ComputeReadings& r) {
  return std::any_of(r.begin() + 1, r.end(), [&](int64_t v) { return v != r[0]; });
}
// What other ranks showed about an op.
enum class Alongside : uint8_t {
  kHeld,      // nothing, nor did any op of its communicator: it held the ranks up
  kPossible,  // nothing; its communicator's ops showed it, too rarely to tell whether
              // they hold the ranks up
  kLikely,    // its communicator's ops run alongside; this one showed nothing
  kSeen,      // a member started another op while in it
};
using KnownAlongside = std::function<Alongside(const trace::OpRecord&)>;
// When a rooted collective ended on its last member, job ns; kNever when unknown, or
// for other ops.
using KnownLastEnd = std::function<int64_t(const trace::OpRecord&)>;

// Gaps shorter than this are back-to-back calls: the op waited for its stream, or
// several were issued together, not after compute.
inline constexpr int64_t kBackToBackNs = 20'000;

class OwnCompute {
 public:
  // `ops`: every op record of one rank, in any order.  `known`, `last_end`: what other
  // ranks showed about the same ops, when that is known.
  OwnCompute(const RankInfo& rank, std::span<const trace::OpRecord> ops,
             const KnownAlongside& known = {}, const KnownLastEnd& last_end = {});

  // Indices into `ops` in order of arrival (ops without an arrival last).
  const std::vector<uint32_t>& order() const { return order_; }
  // Readings before ops[i]; none for the first op on its stream, after an incomplete one,
  // or when the rank created a communicator since the op before on its stream ended (the
  // gap holds set-up: RankInfo::made_comm_in).
  std::optional<ComputeReadings> before(size_t i) const {
    if ((flags_[i] & kHasReadings) == 0) return std::nullopt;
    ComputeReadings r;
    r[0] = first_reading_[i];
    if ((flags_[i] & kReadingsDiffer) != 0) {
      const auto& other = other_readings_[other_at_[i]];
      std::copy(other.begin(), other.end(), r.begin() + 1);
    } else {
      std::fill(r.begin() + 1, r.end(), r[0]);
    }
    return r;
  }
  // ops[i] was in flight while the rank ran ops on other streams.
  bool contended(size_t i) const { return (flags_[i] & kContended) != 0; }
  // The rank started an op on another stream while ops[i] was in flight.
  bool started_another(size_t i) const { return (flags_[i] & kStartedAnother) != 0; }
  // ops[i] did not hold the rank up (as far as is known): its time is the rank's.
  bool ran_alongside(size_t i) const { return (flags_[i] & kAlongside) != 0; }
  // The rank started an op on another stream inside the gap before ops[i]: the gap is
  // several stretches of compute (a rank issues an op between two of its kernels), each
  // with noise of its own.
  bool split(size_t i) const { return (flags_[i] & kSplit) != 0; }
  // The host issued ops[i] after more than half of the gap before it had passed (since the
  // previous op on its stream ended): its stream stood idle, waiting for the host rather
  // than for the GPU's compute (an MPI barrier, a data loader, a process left waiting for
  // a core).  A host that runs ahead of its GPU issues ops before their stream frees.
  bool issued_late(size_t i) const { return (flags_[i] & kIssuedLate) != 0; }
  // ops[i] started back to back after the op before on its stream, and its readings are
  // the rank's compute since it last left a collective that held it up: over a stretch
  // of ops (a pipeline's sends and receives), not the compute before this op alone.
  bool since_held(size_t i) const { return (flags_[i] & kSinceHeld) != 0; }

 private:
  static constexpr uint16_t kContended = 1, kStartedAnother = 2, kAlongside = 4, kSeen = 8,
                            kSplit = 16, kHasReadings = 32, kIssuedLate = 64, kSinceHeld = 128,
                            kReadingsDiffer = 256;
  std::vector<uint32_t> order_;
  // Reading 0, set where flags_ has kHasReadings; where it also has kReadingsDiffer, the
  // other readings are other_readings_[other_at_[i]], else they equal reading 0 (most ops:
  // one stream's ops around them).  Neither array is filled: an entry is written only
  // where it is set, and memory a rank's every op would write and read again is one of
  // the costliest parts of building it.
  std::unique_ptr<int64_t[]> first_reading_;
  std::unique_ptr<uint32_t[]> other_at_;
  std::vector<std::array<int64_t, kReadings - 1>> other_readings_;
  std::vector<uint16_t> flags_;
};

// A rank's OwnCompute kept from one pass over its rows to a later pass of the same
// analysis, when the rows are held in memory (a watch poll, load/window_rows.h): it is
// the costliest part of a pass, and the passes after matching measure the same one
// (GroupTable::own_compute).
struct HeldOwnCompute {
  std::optional<OwnCompute> own;
  // Measured with what the matched ops showed (GroupTable::ran_alongside, GroupTable::last_end),
  // else knowing nothing of the other ranks.
  bool knew_others = false;
};

}  // namespace ringside::analysis
