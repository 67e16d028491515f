# What `cmake --install` puts where, the CMake package and pkg-config file that let other
# programs read traces, and the packages CPack makes (.deb and .tar.gz).
#
# Layout under the prefix:
#   bin/ringside, bin/nccl_bench                       the tools
#   bin/all_reduce_perf, ... -> nccl_bench             nccl-tests' names (drop-in)
#   lib/libringside_probe.so                           what `ringside run` preloads (it looks
#                                                      for it at <prefix>/lib, beside bin/)
#   lib/ringside/ringside_spank.so                     the Slurm SPANK plugin (srun --ringside)
#   lib/ringside/ringside_mpi.so                       MPI for `mpirun -n K ringside analyze`
#                                                      (loaded only under an MPI launcher)
#   sbin/ringside-node-check                           the Slurm node health check
#   lib/libringside_common.a, include/ringside/        the trace library (ringside::trace)
#   lib/cmake/ringside/, lib/pkgconfig/ringside.pc
#   share/doc/ringside/                                README and docs/
# and in the `sim` component, never on the default library path:
#   lib/ringside/sim/                                  the CPU stand-ins for libcuda, libcudart,
#                                                      libnccl and NVML
#   bin/simrun, libexec/ringside/train_example         the sim launcher and the demo program
#   share/ringside/scenarios/                          the sim cluster files of examples/
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Installed programs keep the library directories they were linked with (HDF5's, CUDA's
# and Open MPI's, which are not on the default path on every system).
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
foreach(_t ringside nccl_bench simrun train_example ringside_probe ringside_mpi)
  set_target_properties(${_t} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endforeach()

install(TARGETS ringside nccl_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
foreach(_name ${RINGSIDE_NCCL_TESTS_NAMES})
  install(CODE "file(CREATE_LINK nccl_bench \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/${_name}\" SYMBOLIC)"
          COMPONENT runtime)
endforeach()
install(TARGETS ringside_probe LIBRARY DESTINATION lib COMPONENT runtime)
install(TARGETS ringside_mpi LIBRARY DESTINATION lib/ringside COMPONENT runtime)
if(TARGET ringside_spank)  # the Slurm SPANK plugin (docs/slurm.md), built with Slurm's headers
  install(TARGETS ringside_spank LIBRARY DESTINATION lib/ringside COMPONENT runtime)
endif()
# The Slurm node check (HealthCheckProgram, Prolog, Epilog); it runs ../bin/nccl_bench.
install(PROGRAMS examples/slurm/ringside-node-check DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT runtime)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# The trace library: ringside::trace for find_package(ringside), and pkg-config.
set_target_properties(ringside_common PROPERTIES EXPORT_NAME trace)
install(TARGETS ringside_common EXPORT ringsideTargets
        ARCHIVE DESTINATION lib COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ringside DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT ringsideTargets NAMESPACE ringside:: DESTINATION lib/cmake/ringside COMPONENT dev)
configure_package_config_file(cmake/ringsideConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ringsideConfig.cmake INSTALL_DESTINATION lib/cmake/ringside)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ringsideConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ringsideConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ringsideConfigVersion.cmake
        DESTINATION lib/cmake/ringside COMPONENT dev)
configure_file(cmake/ringside.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ringside.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ringside.pc DESTINATION lib/pkgconfig COMPONENT dev)

# The sim, for trying ringside without a GPU.
install(TARGETS ringsim_cuda ringsim_cudart ringsim_nccl ringsim_nvml
        LIBRARY DESTINATION lib/ringside/sim NAMELINK_SKIP COMPONENT sim)
install(TARGETS simrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT sim)
install(TARGETS train_example RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/ringside COMPONENT sim)
install(DIRECTORY examples/scenarios/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ringside/scenarios
        COMPONENT sim FILES_MATCHING PATTERN "*.json")

# Packages: `cpack -G DEB` or `cpack -G TGZ` in the build directory.  NVIDIA's CUDA runtime
# and NCCL (which nccl_bench needs on a real cluster) come from NVIDIA's repositories, not
# Debian's, so they are recommended rather than required; the sim provides them on a
# machine without a GPU.
set(CPACK_PACKAGE_NAME ringside)
set(CPACK_PACKAGE_VENDOR ringside)
set(CPACK_PACKAGE_CONTACT "ringside maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Diagnose slow and hung distributed GPU training: NCCL probe, trace analyzer, benchmarks")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, libhdf5-103-1, libopenmpi3")
if(RINGSIDE_JEMALLOC_LIBRARY)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libjemalloc2")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cuda-cudart-13-0, libnccl2")
set(CPACK_GENERATOR "DEB;TGZ")
include(CPack)
