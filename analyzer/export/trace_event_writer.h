// Writes the Trace Event Format (the JSON that Perfetto and chrome://tracing
// open) one event at a time: {"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {...}}.  Times are given in ns and written in microseconds with
// three decimals, so no rounding reorders events.  Every string is JSON-escaped
// with non-ASCII written as \u escapes and '<', '>', '&' escaped too, so a hostile
// name can neither break the document nor a page that embeds it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "report/output_file.h"

namespace ringside::analysis {

class TraceEventWriter {
 public:
  explicit TraceEventWriter(OutputFile& out) : out_(out) {}

  Status begin();
  // ph "M": process_name / thread_name and their sort indexes.
  Status process_name(int pid, std::string_view name, int sort_index);
  Status thread_name(int pid, int64_t tid, std::string_view name, int64_t sort_index);
  // ph "X": a complete slice.
  Status slice(int pid, int64_t tid, std::string_view name, std::string_view cat, int64_t ts_ns,
               int64_t dur_ns, const nlohmann::json& args);
  // ph "C": one counter track per (pid, name); args {"value": v}.
  Status counter(int pid, std::string_view name, int64_t ts_ns, double value);
  // ph "i", scope global.
  Status instant(std::string_view name, std::string_view cat, int64_t ts_ns,
                 const nlohmann::json& args);
  Status end(const nlohmann::json& other_data);

  uint64_t events() const { return events_; }

 private:
  Status event(const std::string& body);
  OutputFile& out_;
  uint64_t events_ = 0;
};

// `j` as compact JSON, safe to embed anywhere (see above).
std::string safe_json(const nlohmann::json& j);
// ns as microseconds with three decimals: 1234567 -> "1234.567".
std::string micros(int64_t ns);

}  // namespace ringside::analysis
