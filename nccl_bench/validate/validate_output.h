// What `validate` prints: the node and link tables, the scontrol drain lines,
// and the JSON document (schema "ringside.validate/1").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "validate/evaluate.h"

namespace ringside::bench {

struct ValidateRunInfo {
  std::string level;
  double threshold_pct = 10;
  std::string baseline;  // path or ""
  std::string floors;    // where the floors come from ("built-in floor table + FILE"), or ""
  int nranks = 0;
  double seconds = 0;          // wall time of the tests
  int rounds = 0;              // inter-node rounds
  uint64_t gpu_pair_size = 0;  // bytes of each GPU pair sendrecv
};

std::string render_tables(const ValidateData& d, const Verdict& v, const ValidateRunInfo& info);
// One `scontrol update nodename=... state=drain reason="..."` argument vector per failing node.
std::vector<std::vector<std::string>> drain_commands(const ValidateData& d, const Verdict& v);
std::string render_command(const std::vector<std::string>& argv);
std::string render_json(const ValidateData& d, const Verdict& v, const ValidateRunInfo& info);

// A run aborted by a communicator failure (a peer lost or unresponsive): as
// rank 0 saw it.
struct ValidateAbort {
  int rank = 0;                         // the rank that reports it
  std::string message;                  // the failure message
  std::string kind;                     // "nccl_error" or "timeout"
  std::vector<int> peer_ranks;          // the peer(s) the message names, if any
  std::vector<std::string> peer_nodes;  // their nodes
};
// The JSON document of an aborted run: verdict "fail", no measurements, and
// an "aborted" object.
std::string render_abort_json(const ValidateRunInfo& info, const std::vector<uint64_t>& sizes,
                              const ValidateAbort& a);

}  // namespace ringside::bench
