// Reading a whole input file the user named (a report JSON, an accounting dump).
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace ringside::analysis {

// The file's bytes, or nullopt when it cannot be opened.
inline std::optional<std::string> read_input_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

}  // namespace ringside::analysis
