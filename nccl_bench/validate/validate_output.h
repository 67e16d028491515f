// What `validate` prints: the node and link tables, the scontrol drain lines,
// and the JSON document (schema "ringside.validate/1").
#pragma once

#include <string>
#include <vector>

#include "validate/evaluate.h"

namespace ringside::bench {

struct ValidateRunInfo {
  std::string level;
  double threshold_pct = 10;
  std::string baseline;  // path or ""
  int nranks = 0;
  double seconds = 0;  // wall time of the tests
  int rounds = 0;      // inter-node rounds
};

std::string render_tables(const ValidateData& d, const Verdict& v, const ValidateRunInfo& info);
// One `scontrol update nodename=... state=drain reason="..."` argument vector per failing node.
std::vector<std::vector<std::string>> drain_commands(const ValidateData& d, const Verdict& v);
std::string render_command(const std::vector<std::string>& argv);
std::string render_json(const ValidateData& d, const Verdict& v, const ValidateRunInfo& info);

}  // namespace ringside::bench
