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

// Whether the job is over, poll by poll: every traced rank (at least as many as
// the job has) closed its file or is known dead.  A rank that is exiting looks
// dead until its file is closed (its shutdown record comes with the close), so an
// end that rests on dead ranks must show on two polls in a row.
class JobEnd {
 public:
  bool update(int64_t ranks, int64_t traced, int64_t closed, int64_t dead);

 private:
  bool ended_before_ = false;
};

}  // namespace ringside::analysis::watch
