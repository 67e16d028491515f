// The processes of one parallel analysis (`mpirun -n K ringside analyze DIR`): each
// reads a share of the rank files, and every pass's partial states are exchanged and
// merged in process order (analyze.cpp), so K processes write the report one would.
//
// MPI is not linked into `ringside`: the MPI transport is a plugin,
// <prefix>/lib/ringside/ringside_mpi.so (parallel/mpi_plugin.cpp), loaded only when an
// MPI launcher started the process (launched_under_mpi).  A plain `ringside analyze`
// needs no MPI library at run time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ringside::analysis {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Hands every process's `mine` to `each`, in process order, on every process, one at
  // a time; `mine` is released once handed on, so a process holds at most its own and
  // one other at once, and after its turn only one.  Collective: every process calls it
  // the same number of times.
  virtual void all_gather(std::string mine, const std::function<void(std::string_view)>& each) = 0;
};

// The plugin's entry point: initializes MPI; null with `error` set if it cannot.
// The returned group finalizes MPI when deleted.
using OpenProcessGroupFn = ProcessGroup* (*)(std::string& error);
inline constexpr const char* kOpenProcessGroupSymbol = "ringside_open_mpi_process_group";

// Whether an MPI launcher (Open MPI's mpirun, MPICH/PMI, PMIx, srun with --mpi) started
// this process as one of several: the environment it sets says how many.
bool launched_under_mpi();

// Loads the MPI plugin next to the executable and joins the launcher's processes.
// Throws std::runtime_error naming the plugin and the reason when it cannot.
std::unique_ptr<ProcessGroup> open_mpi_process_group();

}  // namespace ringside::analysis
