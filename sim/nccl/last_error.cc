#include "last_error.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ringside::sim::nccl {
namespace {

std::mutex& error_mutex() {
  static std::mutex m;
  return m;
}
std::string& error_text() {
  static std::string* s = new std::string();  // leaked: usable during exit
  return *s;
}

bool nccl_debug_warn() {
  static const bool on = [] {
    const char* v = std::getenv("NCCL_DEBUG");
    return v && (strcasecmp(v, "WARN") == 0 || strcasecmp(v, "INFO") == 0 ||
                 strcasecmp(v, "TRACE") == 0);
  }();
  return on;
}

void print_line(const std::string& message) {
  std::string line = "ringsim nccl [pid " + std::to_string(getpid()) + "]: " + message + "\n";
  // One write so lines from concurrent ranks do not interleave.
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

ncclResult_t fail(ncclResult_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(error_mutex());
    error_text() = message;
  }
  if (nccl_debug_warn() || debug_enabled()) print_line("WARN " + message);
  return code;
}

std::string last_error() {
  std::lock_guard<std::mutex> lock(error_mutex());
  return error_text();
}

bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("RINGSIM_DEBUG");
    return v && std::strcmp(v, "0") != 0 && v[0] != '\0';
  }();
  return on;
}

void debug_log(const std::string& message) {
  if (debug_enabled()) print_line(message);
}

void warn(const std::string& message) {
  print_line("WARN " + message);
}

}  // namespace ringside::sim::nccl
