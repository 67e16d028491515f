#include "export/trace_event_writer.h"

#include <cinttypes>
#include <cstdio>

namespace ringside::analysis {

std::string safe_json(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  // Outside strings JSON has none of these characters, so replacing them
  // everywhere only touches string contents.
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

std::string micros(int64_t ns) {
  char buf[40];
  const bool negative = ns < 0;
  const uint64_t a = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, negative ? "-" : "", a / 1000,
                a % 1000);
  return buf;
}

Status TraceEventWriter::begin() {
  return out_.write("{\"traceEvents\":[\n");
}

Status TraceEventWriter::event(const std::string& body) {
  Status s = out_.write(events_ == 0 ? body : ",\n" + body);
  ++events_;
  return s;
}

Status TraceEventWriter::process_name(int pid, std::string_view name, int sort_index) {
  const std::string p = std::to_string(pid);
  if (Status s =
          event("{\"ph\":\"M\",\"pid\":" + p + ",\"tid\":0,\"name\":\"process_name\",\"args\":" +
                safe_json({{"name", std::string(name)}}) + "}");
      !s.ok())
    return s;
  return event("{\"ph\":\"M\",\"pid\":" + p +
               ",\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" +
               std::to_string(sort_index) + "}}");
}

Status TraceEventWriter::thread_name(int pid, int64_t tid, std::string_view name,
                                     int64_t sort_index) {
  const std::string head =
      "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
  if (Status s = event(head + ",\"name\":\"thread_name\",\"args\":" +
                       safe_json({{"name", std::string(name)}}) + "}");
      !s.ok())
    return s;
  return event(head + ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" +
               std::to_string(sort_index) + "}}");
}

Status TraceEventWriter::slice(int pid, int64_t tid, std::string_view name, std::string_view cat,
                               int64_t ts_ns, int64_t dur_ns, const nlohmann::json& args) {
  return event("{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
               ",\"name\":" + safe_json(std::string(name)) +
               ",\"cat\":" + safe_json(std::string(cat)) + ",\"ts\":" + micros(ts_ns) +
               ",\"dur\":" + micros(dur_ns) + ",\"args\":" + safe_json(args) + "}");
}

Status TraceEventWriter::counter(int pid, std::string_view name, int64_t ts_ns, double value) {
  return event("{\"ph\":\"C\",\"pid\":" + std::to_string(pid) +
               ",\"tid\":0,\"name\":" + safe_json(std::string(name)) + ",\"ts\":" + micros(ts_ns) +
               ",\"args\":" + safe_json({{"value", value}}) + "}");
}

Status TraceEventWriter::instant(std::string_view name, std::string_view cat, int64_t ts_ns,
                                 const nlohmann::json& args) {
  return event("{\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"name\":" +
               safe_json(std::string(name)) + ",\"cat\":" + safe_json(std::string(cat)) +
               ",\"ts\":" + micros(ts_ns) + ",\"args\":" + safe_json(args) + "}");
}

Status TraceEventWriter::end(const nlohmann::json& other_data) {
  return out_.write("\n],\"displayTimeUnit\":\"ms\",\"otherData\":" + safe_json(other_data) +
                    "}\n");
}

}  // namespace ringside::analysis
