// A reader of nccl-tests' text output (the format its README and
// doc/PERFORMANCE.md describe, and what its programs print), used on both
// nccl-tests' captured output and nccl_bench's: the layouts must be the same,
// the numbers of course differ.
#pragma once

#include <string>
#include <vector>

namespace ringside::bench::testing {

struct LayoutRow {
  std::string type, redop, root;  // the row's key columns (size and count are numbers)
  size_t fields = 0;              // whitespace-separated fields, the timestamp as 2
};

struct Layout {
  // Every line's kind, in order, with a run of rows as one "row": "version",
  // "starting", "parameters", "option", "#", "devices", "rank", "columns",
  // "units", "row", "out_of_bounds", "avg_busbw", "concluded", "" (an empty line).
  std::vector<std::string> kinds;
  std::string program;                  // first word after '#' on the version line
  std::string test_name;                // "all_reduce_perf"
  std::vector<std::string> parameters;  // the parameter line's keys, in order
  std::vector<std::string> options;     // "Blocking Enabled", "Per-Iteration Report", ...
  std::vector<std::string> columns;     // the column-name line's words
  std::vector<std::string> units;       // the units line's words
  std::string group_line;               // the line above the column names, spaces squeezed
  std::vector<LayoutRow> rows;
  std::vector<std::string> problems;  // lines the format does not allow
};

Layout parse_layout(const std::string& text);

}  // namespace ringside::bench::testing
