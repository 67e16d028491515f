// Whole communicators against their siblings.
//
// Comparing the members of one communicator with each other cannot see a slowdown
// they all share: a slow node holding a whole tensor-parallel group, or a replica or
// pipeline stage with more work whose ranks meet the rest only in ops that have no
// reading (gradient buckets overlapped with the backward pass, match/own_compute.h).
// The communicators of one family (match/comm_roles.h: one role and size, disjoint
// members) in one pipeline stage run the same calls at the same sequence numbers and,
// in a healthy job, compute as long before each.  (Siblings in different stages do not:
// one computes before a collective where another has waited in a send/recv, so they
// are never compared.)  So each is compared with its siblings op by op, the
// way rank_stats.h compares a rank with its peers: a communicator is late at an op
// when its own compute before it exceeds the siblings' mean by the late margin under
// every reading.
//
// A communicator's own compute before an op is its fastest member's: a straggler among
// the members makes the others wait inside the op, not before the next one, so a group
// holding one straggler is not late, while a group whose members are all slower is.
// Siblings are compared at a sequence number only where their calls agree (op, count,
// type; the most common call when some differ) and every member of each has a reading.
// Where the readings disagree (late under some, not under others: ops on other streams
// in the gap that may have held the ranks up or not), the op counts neither for nor
// against: unlike
// the members of one communicator, siblings need not have the same ops around theirs.
#pragma once

#include <cstdint>
#include <vector>

#include "load/trace_set.h"
#include "match/group_table.h"
#include "match/rank_stats.h"

namespace ringside::analysis {

class SiblingLateness {
 public:
  // A family (of one pipeline stage) that had siblings to compare, and how far apart
  // they were from op to op: over the ops compared, the median spread (coefficient of
  // variation and standard deviation, ns) of the communicators' own compute, each less
  // its mean offset from its siblings (a lasting difference is structure, a heavier
  // replica, not data that varies).
  struct Family {
    std::vector<int> comms;  // comm indices
    double median_cv = 0;
    double median_sd_ns = 0;
    // What the members waited for the communicator that computed longest before each
    // op, had all started together, from that varying part alone: sum over
    // communicators and ops of members x (largest - own), rank-ns.
    double spread_wait_ns = 0;
    uint64_t compared = 0;  // ops where siblings met
    int members = 0;        // ranks of each communicator
  };

  SiblingLateness(const TraceSet& set, const GroupTable& table,
                  double late_margin = kDefaultLateMargin);

  // Communicator `comm` (index) against its siblings; null when it was never compared.
  // `last` counts the ops where it was the slowest, `cost_ns` what that cost the
  // siblings (its excess, at most its lead over the second slowest).
  const Lateness* of(int comm) const;
  // The communicators a rank was compared through, one per family it is in.
  const std::vector<int>& comms_of(int64_t rank) const;
  // The family of a compared communicator (index into families()), or -1.
  int family_of(int comm) const;
  const std::vector<Family>& families() const { return families_; }

 private:
  std::vector<Lateness> by_comm_;
  std::vector<int> family_;
  std::vector<std::vector<int>> rank_comms_;
  std::vector<Family> families_;
};

}  // namespace ringside::analysis
