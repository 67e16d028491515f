#include "nccl_tests_layout.h"

#include <regex>
#include <sstream>

namespace ringside::bench::testing {

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

std::string squeeze(const std::string& s) {
  std::string out;
  for (const std::string& w : words(s)) out += (out.empty() ? "" : " ") + w;
  return out;
}

void add_kind(Layout& l, const std::string& kind) {
  if (kind == "row" && !l.kinds.empty() && l.kinds.back() == "row") return;
  if (kind == "rank" && !l.kinds.empty() && l.kinds.back() == "rank") return;
  l.kinds.push_back(kind);
}

}  // namespace

Layout parse_layout(const std::string& text) {
  static const std::regex version(R"(^# (\S+) version (\S+) nccl-headers=\d+ nccl-library=\d+$)");
  static const std::regex starting(R"(^# Collective test starting: (\S+)$)");
  static const std::regex concluded(R"(^# Collective test concluded: (\S+)$)");
  // "nThread 1 nGpus 1 ... step: 2(factor) ..." : keys are the words before a number.
  static const std::regex parameter(R"(([A-Za-z][A-Za-z ]*?):? (\d+)(\((?:factor|bytes)\))?)");
  static const std::regex option(R"(^# ([A-Z][A-Za-z-]*(?: [A-Za-z-]+)*): .*$)");
  static const std::regex rank(
      R"(^#  Rank +\d+ Group +\d+ Pid +\d+ on +\S+ device +\d+ \[[0-9a-fA-F:]+\] .+$)");
  static const std::regex out_of_bounds(R"(^# Out of bounds values : \d+ (OK|FAILED)$)");
  static const std::regex avg_busbw(R"(^# Avg bus bandwidth    : \S+ (OK|FAILED)?$)");
  Layout l;
  std::istringstream in(text);
  std::string line;
  std::string previous;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, version)) {
      l.program = m[1];
      add_kind(l, "version");
    } else if (std::regex_match(line, m, starting)) {
      l.test_name = m[1];
      add_kind(l, "starting");
    } else if (line.rfind("# nThread ", 0) == 0) {
      const std::string body = line.substr(2);
      for (auto it = std::sregex_iterator(body.begin(), body.end(), parameter);
           it != std::sregex_iterator(); ++it) {
        l.parameters.push_back(squeeze((*it)[1]));
      }
      add_kind(l, "parameters");
    } else if (line == "#") {
      add_kind(l, "#");
    } else if (line == "# Using devices") {
      add_kind(l, "devices");
    } else if (std::regex_match(line, rank)) {
      add_kind(l, "rank");
    } else if (line.rfind("#  ", 0) == 0 && line.find("size") != std::string::npos) {
      l.columns = words(line.substr(1));
      l.group_line = squeeze(previous.substr(1));
      add_kind(l, "columns");
    } else if (line.rfind("#  ", 0) == 0 && line.find("(B)") != std::string::npos) {
      l.units = words(line.substr(1));
      add_kind(l, "units");
    } else if (line.rfind("#  ", 0) == 0 && line.find("out-of-place") != std::string::npos) {
      // the group line, read with the column names below it
    } else if (std::regex_match(line, out_of_bounds)) {
      add_kind(l, "out_of_bounds");
    } else if (std::regex_match(line, avg_busbw)) {
      add_kind(l, "avg_busbw");
    } else if (std::regex_match(line, m, concluded)) {
      if (m[1] != l.test_name) l.problems.push_back("concluded names another test: " + line);
      add_kind(l, "concluded");
    } else if (line.empty()) {
      add_kind(l, "");
    } else if (std::regex_match(line, m, option)) {
      l.options.push_back(m[1]);
      add_kind(l, "option");
    } else if (line[0] != '#') {
      const std::vector<std::string> w = words(line);
      if (w.size() < 5) {
        l.problems.push_back("short row: " + line);
      } else {
        l.rows.push_back({w[2], w[3], w[4], w.size()});
      }
      add_kind(l, "row");
    } else {
      l.problems.push_back("unknown line: " + line);
    }
    previous = line;
  }
  return l;
}

}  // namespace ringside::bench::testing
