// Slurm accounting of the jobs a fleet view covers: from `sacct` run with the
// jobs' ids, or from a saved dump (`sacct -P` output with its header line, or
// `sacct --json`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringside/status.h"

namespace ringside::analysis::fleet {

struct SacctJob {
  std::string job_id;  // the allocation's id (array and het jobs: as sacct prints it)
  std::string name, partition, user, state, node_list;
  std::optional<int64_t> submit_s, start_s, end_s;  // Unix time
  std::optional<double> elapsed_s;
  std::optional<int64_t> gpus;  // allocated GPUs (AllocTRES gres/gpu)
  std::optional<double> wait_s() const {
    if (!submit_s || !start_s || *start_s < *submit_s) return std::nullopt;
    return static_cast<double>(*start_s - *submit_s);
  }
};

// The fields `run_sacct` asks for; a saved `sacct -P` dump needs a header line
// with at least JobID, and uses whichever of these it has.
inline constexpr const char* kSacctFormat =
    "JobID,JobName,Partition,User,State,Submit,Start,End,ElapsedRaw,NodeList,AllocTRES";

// Parses a saved dump; the format (parsable text or JSON) is told from the
// first character.  Errors name the line or field that could not be read.
Status parse_sacct(const std::string& text, const std::string& source,
                   std::map<std::string, SacctJob>* jobs);

// Runs `sacct -X -P --format=kSacctFormat -j IDS` (numeric ids only; others
// are not Slurm's) and parses its output.  `sacct` = the program to run.
Status run_sacct(const std::string& sacct, const std::vector<std::string>& job_ids,
                 std::map<std::string, SacctJob>* jobs);

}  // namespace ringside::analysis::fleet
