// Helpers for the sim tests: run a command, capture stdout, write temp cluster files.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace ringside::sim::test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// key=value lines -> map.
inline std::map<std::string, std::string> parse_kv(const std::string& text) {
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

inline std::string write_temp(const std::string& name, const std::string& content) {
  std::string path =
      std::string(::testing::TempDir()) + "/" + name + "." + std::to_string(getpid()) + ".json";
  std::ofstream(path) << content;
  return path;
}

// Environment prefix that puts the sim libraries first, whatever the test runner set.
inline std::string sim_env() {
  return std::string("env LD_LIBRARY_PATH=") + RINGSIDE_SIM_LIB_DIR_STR + " ";
}

}  // namespace ringside::sim::test
