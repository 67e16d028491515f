// Checked CUDA, NCCL and MPI calls: a failure throws CallError whose message
// names the call, the decoded error, file:line, the host and the rank.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace ringside::examples {

// A CUDA/NCCL/MPI call failed (exit status 1).
struct CallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bad flags or launch environment (exit status 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The all-reduce (or another verified transfer) produced a wrong value (exit 1).
struct VerifyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Sets the host and rank that every later error message names.
void set_error_context(const std::string& host, int rank);
// "host H rank R" (rank "?" before bootstrap has found it).
std::string error_context();

void check_cuda(cudaError_t result, const char* call, const char* file, int line);
void check_nccl(ncclResult_t result, const char* call, const char* file, int line,
                ncclComm_t comm = nullptr);
void check_mpi(int result, const char* call, const char* file, int line);

}  // namespace ringside::examples

// The macros only add the call text and location; they throw, never return.
#define RINGSIDE_CUDA_CHECK(call) \
  ::ringside::examples::check_cuda((call), #call, __FILE__, __LINE__)
#define RINGSIDE_NCCL_CHECK(call) \
  ::ringside::examples::check_nccl((call), #call, __FILE__, __LINE__)
// For calls on one communicator: ncclGetLastError(comm) adds NCCL's own detail.
#define RINGSIDE_NCCL_CHECK_COMM(call, comm) \
  ::ringside::examples::check_nccl((call), #call, __FILE__, __LINE__, (comm))
#define RINGSIDE_MPI_CHECK(call) ::ringside::examples::check_mpi((call), #call, __FILE__, __LINE__)
