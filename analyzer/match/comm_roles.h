// Communicator roles from membership: which communicators are the world, the
// tensor-parallel (tp), pipeline (pp) and data-parallel (dp) groups, whatever
// they were created with (ncclCommSplit, separate unique ids, ncclCommInitAll),
// and the name every report uses for them: "world", "tp[4,5] on node2",
// "dp{1,3,5,7}", "pp{0,4}".
//
// The rules (docs/analyzer.md, "Communicator roles"):
//   world  every rank of the job is a member
//   pp     only send/recv ever ran on it
//   tp     collectives, every member on one node, members consecutive global ranks
//   dp     any other communicator that ran collectives
// A group whose ops were never seen (created, unused) has no role.
#pragma once

#include <string>
#include <vector>

#include "load/trace_set.h"
#include "match/group_table.h"

namespace ringside::analysis {

// Sets `role` and `label` of every communicator in `set`.
void infer_comm_roles(TraceSet& set, const GroupTable& table);

// A family: the communicators of one role and size with disjoint members (the
// tensor-parallel groups, the data-parallel groups, the pipeline groups), in order
// of comm index.  A communicator with the same members as one already taken (a
// second data-parallel group for another bucket stream) is not in any; the world
// and communicators with unknown members are in none.
struct CommFamily {
  std::vector<const CommInfo*> comms;
  std::string role;
};
std::vector<CommFamily> comm_families(const TraceSet& set);

// "{1,3,5,7}" or "[4,5]" / "[0-7]" (consecutive ranks); long lists are cut
// with the member count.  Unknown members (-1) are shown as '?'.
std::string member_list(const std::vector<int64_t>& members);

}  // namespace ringside::analysis
