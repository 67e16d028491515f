#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "parallel/process_group.h"

namespace ringside::analysis {
namespace {

// A launcher's process count, or 0 when `name` is unset.
long env_count(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1)
    throw std::runtime_error(std::string(name) + "='" + v +
                             "' is not a process count: cannot tell whether this is one of "
                             "several MPI processes");
  return n;
}

// <prefix>/bin/ringside -> <prefix>/lib/ringside/ringside_mpi.so
std::filesystem::path plugin_path() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error("cannot find the ringside executable (/proc/self/exe): " +
                             ec.message());
  return exe.parent_path().parent_path() / "lib" / "ringside" / "ringside_mpi.so";
}

}  // namespace

bool launched_under_mpi() {
  // Open MPI's mpirun, Hydra/PMI (MPICH, Intel MPI), PMIx (srun --mpi=pmix, prterun):
  // even one process (mpirun -n 1) runs the parallel path.  Slurm's srun without MPI
  // support sets only its own variables: several tasks are taken to be one analysis
  // (joining them fails with a clear error if srun gave MPI no way to).
  if (env_count("OMPI_COMM_WORLD_SIZE") > 0 || env_count("PMI_SIZE") > 0) return true;
  if (const char* v = std::getenv("PMIX_RANK"); v != nullptr && *v != '\0') return true;
  return env_count("SLURM_STEP_NUM_TASKS") > 1;
}

std::unique_ptr<ProcessGroup> open_mpi_process_group() {
  const std::filesystem::path path = plugin_path();
  // Kept loaded for the life of the process: MPI's libraries cannot be unloaded.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr)
    throw std::runtime_error(
        "launched under MPI, but the MPI plugin cannot be loaded: " + std::string(dlerror()) +
        " (install Open MPI's libraries: Debian package libopenmpi3)");
  auto open = reinterpret_cast<OpenProcessGroupFn>(dlsym(handle, kOpenProcessGroupSymbol));
  if (open == nullptr)
    throw std::runtime_error(path.string() + " is not ringside's MPI plugin (no " +
                             kOpenProcessGroupSymbol + ")");
  std::string error;
  std::unique_ptr<ProcessGroup> group(open(error));
  if (!group) throw std::runtime_error("MPI: " + error);
  // srun without MPI support starts independent processes of one each.
  long expected = std::max(env_count("OMPI_COMM_WORLD_SIZE"), env_count("PMI_SIZE"));
  if (expected == 0) expected = env_count("SLURM_STEP_NUM_TASKS");
  if (expected > 1 && group->size() != expected)
    throw std::runtime_error("the launcher started " + std::to_string(expected) +
                             " processes but MPI joined " + std::to_string(group->size()) +
                             " (with srun, pass --mpi=pmix or the MPI type of this cluster)");
  return group;
}

}  // namespace ringside::analysis
