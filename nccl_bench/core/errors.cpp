#include "core/errors.h"

namespace ringside::bench {

namespace {
std::string& context_storage() {
  static std::string context = "rank ?";
  return context;
}
}  // namespace

void set_error_context(const std::string& host, int rank) {
  context_storage() = "host " + host + " rank " + std::to_string(rank);
}

const std::string& error_context() {
  return context_storage();
}

void throw_cuda(const char* call, cudaError_t err, const char* file, int line) {
  throw RuntimeError(std::string(call) + " failed: " + cudaGetErrorName(err) + " (" +
                     cudaGetErrorString(err) + ") at " + file + ":" + std::to_string(line) + ", " +
                     error_context());
}

void throw_nccl(const char* call, ncclResult_t res, const char* file, int line) {
  throw RuntimeError(std::string(call) + " failed: " + ncclGetErrorString(res) + " (ncclResult " +
                     std::to_string(static_cast<int>(res)) + ") at " + file + ":" +
                     std::to_string(line) + ", " + error_context());
}

}  // namespace ringside::bench
