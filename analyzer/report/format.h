// Number formatting for the analyzer's evidence sentences and terminal report.
#pragma once

#include <cstdio>
#include <string>

namespace ringside::analysis {

// printf-style formatting of one number, e.g. fmt("%.1f", 12.34) == "12.3".
inline std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

}  // namespace ringside::analysis
