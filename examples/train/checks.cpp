#include "checks.h"

#include <unistd.h>

#include <cstring>

namespace ringside::examples {
namespace {

std::string g_host;
std::string g_rank = "?";

std::string local_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

std::string location(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash != nullptr ? slash + 1 : file) + ":" + std::to_string(line);
}

}  // namespace

void set_error_context(const std::string& host, int rank) {
  g_host = host;
  g_rank = std::to_string(rank);
}

std::string error_context() {
  if (g_host.empty()) g_host = local_host();
  return "host " + g_host + " rank " + g_rank;
}

void check_cuda(cudaError_t result, const char* call, const char* file, int line) {
  if (result == cudaSuccess) return;
  throw CallError(std::string(call) + " failed: " + cudaGetErrorName(result) + " (" +
                  cudaGetErrorString(result) + ") at " + location(file, line) + " on " +
                  error_context());
}

void check_nccl(ncclResult_t result, const char* call, const char* file, int line,
                ncclComm_t comm) {
  if (result == ncclSuccess) return;
  std::string message = std::string(call) + " failed: " + ncclGetErrorString(result) + " (" +
                        std::to_string(static_cast<int>(result)) + ")";
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') message += ": " + std::string(detail);
  throw CallError(message + " at " + location(file, line) + " on " + error_context());
}

void check_mpi(int result, const char* call, const char* file, int line) {
  if (result == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(result, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof(text), "MPI error %d", result);
  }
  throw CallError(std::string(call) + " failed: " + text + " at " + location(file, line) + " on " +
                  error_context());
}

}  // namespace ringside::examples
