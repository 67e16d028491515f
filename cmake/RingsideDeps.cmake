# Finds every dependency; a missing one stops configuration and names the
# Debian package that provides it (scripts/demo and scripts/test install them all first).

macro(ringside_require _found _what _package)
  if(NOT ${_found})
    message(FATAL_ERROR "ringside: ${_what} not found. Install the Debian package '${_package}' "
                        "(or run scripts/demo or scripts/test, which install every dependency first).")
  endif()
endmacro()

if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit 13)
ringside_require(CUDAToolkit_FOUND "CUDA toolkit 13 (CUDA::cudart, CUDA::cupti)"
                 "cuda-toolkit-13 from NVIDIA's repository, installed under /usr/local/cuda")

find_package(NCCL 2.28)
ringside_require(NCCL_FOUND "NCCL >= 2.28 (nccl.h, libnccl.so.2)" "libnccl-dev (NVIDIA repository), or set NCCL_HOME")

find_package(HDF5 COMPONENTS C)
ringside_require(HDF5_FOUND "HDF5 C library" "libhdf5-dev")
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
endif()

find_package(Eigen3 3.3 NO_MODULE)
ringside_require(Eigen3_FOUND "Eigen3" "libeigen3-dev")

find_package(CLI11 CONFIG)
ringside_require(CLI11_FOUND "CLI11" "libcli11-dev")

find_package(nlohmann_json 3 CONFIG)
ringside_require(nlohmann_json_FOUND "nlohmann-json" "nlohmann-json3-dev")

find_package(MPI COMPONENTS CXX)
ringside_require(MPI_FOUND "MPI (Open MPI)" "libopenmpi-dev")

find_package(Threads REQUIRED)

# The analyzer's allocator (optional): a watch poll frees and allocates every rank's
# window rows and HDF5's per-read buffers; with jemalloc a poll of 1024 ranks takes
# about a quarter less CPU and its process a quarter less memory than with the C
# library's malloc, whose heap fragments over the polls (docs/analyzer.md, "Watch").
# The watch also keeps the pages a poll frees for the next one (watch/freed_pages.h).
# Linked into the analyzer's executables only: never into the probe, which runs
# inside the job.
find_library(RINGSIDE_JEMALLOC_LIBRARY NAMES jemalloc libjemalloc.so.2)
add_library(ringside_allocator INTERFACE)
if(RINGSIDE_JEMALLOC_LIBRARY)
  target_link_libraries(ringside_allocator INTERFACE ${RINGSIDE_JEMALLOC_LIBRARY})
else()
  message(STATUS "ringside: jemalloc not found (Debian package 'libjemalloc-dev'): the analyzer "
                 "uses the C library's allocator, and a watch poll costs about a third more CPU")
endif()

if(RINGSIDE_BUILD_TESTS)
  find_package(GTest CONFIG)
  if(NOT GTest_FOUND)
    find_package(GTest)
  endif()
  ringside_require(GTest_FOUND "GoogleTest" "libgtest-dev")
  find_package(Python3 COMPONENTS Interpreter)
  ringside_require(Python3_FOUND "python3" "python3")
endif()
