// Which findings `ringside watch` announces and clears, poll by poll.  Live
// files are read while their writers append, so one poll can read a file caught
// mid-flush: a finding is announced once two polls in a row show it, and
// cleared once two in a row do not.  When the job is over (every trace closed
// or its rank known dead) what is read is whole, and a poll's findings are
// announced at once.  A finding is known by what it blames (kind, subkind,
// ranks, nodes), not by its figures, which change from poll to poll.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/report.h"

namespace ringside::analysis::watch {

class FindingDebounce {
 public:
  struct Changes {
    std::vector<Finding> added;    // to announce, in the report's order
    std::vector<Finding> cleared;  // announced before, gone for two polls
  };
  Changes update(const std::vector<Finding>& findings, bool job_over);

 private:
  std::map<std::string, Finding> open_;  // announced, with their latest figures
  std::set<std::string> previous_;       // shown by the last poll
};

}  // namespace ringside::analysis::watch
