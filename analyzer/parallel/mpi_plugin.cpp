// ringside_mpi.so: the MPI transport of a parallel analysis (parallel/process_group.h),
// loaded by `ringside` only when launched under MPI.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
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

  void all_gather(std::string mine, const std::function<void(std::string_view)>& each) override {
    wait_for_all();
    std::vector<uint64_t> sizes(static_cast<size_t>(size_));
    uint64_t my_size = mine.size();
    check("MPI_Allgather",
          MPI_Allgather(&my_size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD));
    std::string theirs;
    for (int p = 0; p < size_; ++p) {
      if (p != rank_) theirs.resize(sizes[static_cast<size_t>(p)]);
      char* data = p == rank_ ? mine.data() : theirs.data();
      for (uint64_t at = 0; at < sizes[static_cast<size_t>(p)]; at += kMaxPiece) {
        const auto n =
            static_cast<int>(std::min<uint64_t>(kMaxPiece, sizes[static_cast<size_t>(p)] - at));
        check("MPI_Bcast", MPI_Bcast(data + at, n, MPI_BYTE, p, MPI_COMM_WORLD));
      }
      each(p == rank_ ? std::string_view(mine) : std::string_view(theirs));
      if (p == rank_) std::string().swap(mine);
    }
  }

 private:
  // Processes finish their share at different times: the early ones wait here sleeping,
  // not in a collective that polls (MPI's waits spin, taking a core from the ones still
  // reading).
  void wait_for_all() {
    MPI_Request request;
    check("MPI_Ibarrier", MPI_Ibarrier(MPI_COMM_WORLD, &request));
    for (int done = 0;;) {
      check("MPI_Test", MPI_Test(&request, &done, MPI_STATUS_IGNORE));
      if (done) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

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
