// Typed errors of nccl_bench.  Code throws; main() maps them to exit codes
// (UsageError -> 2, RuntimeError -> 2, CommFailure -> 2 for a benchmark and 1 for
// validate; a failed verdict is a return value, not an error).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace ringside::bench {

// Bad flags or input files: the message names the input and the fix.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUDA/NCCL/MPI/system call failed while running.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class FailureKind {
  kAsyncError,  // NCCL reported an asynchronous error (e.g. ncclRemoteError: a peer is gone)
  kTimeout,     // the work did not finish within the time limit (-T)
  kElsewhere,   // another thread of this process gave up first
};

// A communicator failed while this rank waited on it (core/watchdog.h); its
// communicators have been aborted.  The message names the failure, the work,
// the communicator and, where known, the peer.
class CommFailure : public RuntimeError {
 public:
  CommFailure(const std::string& message, FailureKind kind, ncclResult_t code,
              std::vector<int> peers, double waited_seconds)
      : RuntimeError(message),
        kind_(kind),
        code_(code),
        peers_(std::move(peers)),
        waited_seconds_(waited_seconds) {}
  FailureKind kind() const { return kind_; }
  ncclResult_t code() const { return code_; }  // ncclSuccess for a timeout
  // World ranks named as the dead or unresponsive peer; empty when not known.
  const std::vector<int>& peers() const { return peers_; }
  double waited_seconds() const { return waited_seconds_; }

 private:
  FailureKind kind_;
  ncclResult_t code_;
  std::vector<int> peers_;
  double waited_seconds_;
};

// "host <name> rank <r>" prefix for messages; set once the identity is known.
void set_error_context(const std::string& host, int rank);
const std::string& error_context();

[[noreturn]] void throw_cuda(const char* call, cudaError_t err, const char* file, int line);
[[noreturn]] void throw_nccl(const char* call, ncclResult_t res, const char* file, int line);

}  // namespace ringside::bench

#define RINGSIDE_CUDA_CHECK(call)                                              \
  do {                                                                         \
    cudaError_t ringside_err_ = (call);                                        \
    if (ringside_err_ != cudaSuccess)                                          \
      ::ringside::bench::throw_cuda(#call, ringside_err_, __FILE__, __LINE__); \
  } while (0)

#define RINGSIDE_NCCL_CHECK(call)                                              \
  do {                                                                         \
    ncclResult_t ringside_res_ = (call);                                       \
    if (ringside_res_ != ncclSuccess)                                          \
      ::ringside::bench::throw_nccl(#call, ringside_res_, __FILE__, __LINE__); \
  } while (0)
