// ringside_mpi.so: the MPI transport of a parallel analysis (parallel/process_group.h),
// loaded by `ringside` only when launched under MPI.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "parallel/process_group.h"

namespace ringside::analysis {
namespace {

// Broadcasts go in pieces under MPI's int counts.
constexpr uint64_t kMaxPiece = uint64_t{1} << 30;

std::string mpi_error(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(call) + " failed: " + std::string(text, static_cast<size_t>(len));
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  ~MpiProcessGroup() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> all_gather(const std::string& mine) override {
    std::vector<uint64_t> sizes(static_cast<size_t>(size_));
    uint64_t my_size = mine.size();
    check("MPI_Allgather",
          MPI_Allgather(&my_size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD));
    std::vector<std::string> all(static_cast<size_t>(size_));
    for (int p = 0; p < size_; ++p) {
      std::string& s = all[static_cast<size_t>(p)];
      if (p == rank_) {
        s = mine;
      } else {
        s.resize(sizes[static_cast<size_t>(p)]);
      }
      for (uint64_t at = 0; at < s.size(); at += kMaxPiece) {
        const auto n = static_cast<int>(std::min<uint64_t>(kMaxPiece, s.size() - at));
        check("MPI_Bcast", MPI_Bcast(s.data() + at, n, MPI_BYTE, p, MPI_COMM_WORLD));
      }
    }
    return all;
  }

 private:
  // Errors return (MPI_ERRORS_RETURN); one process failing an exchange cannot go on,
  // and the others would wait for it: end them all.
  static void check(const char* call, int code) {
    if (code == MPI_SUCCESS) return;
    const std::string message = "ringside: " + mpi_error(call, code) + "\n";
    fputs(message.c_str(), stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank_, size_;
};

}  // namespace
}  // namespace ringside::analysis

extern "C" __attribute__((visibility("default"))) ringside::analysis::ProcessGroup*
ringside_open_mpi_process_group(std::string& error) {
  using ringside::analysis::mpi_error;
  if (int code = MPI_Init(nullptr, nullptr); code != MPI_SUCCESS) {
    error = mpi_error("MPI_Init", code);
    return nullptr;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return new ringside::analysis::MpiProcessGroup(rank, size);
}
