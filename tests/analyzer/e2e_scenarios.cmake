# End-to-end scenarios on the sim: simrun + `ringside run` + train_example, then
# `ringside analyze --json`, asserted by scripts in e2e/.  Registered only when
# the pieces exist (the sim's simrun, the probe's launcher, the example).
function(ringside_add_e2e_scenario name)
  cmake_parse_arguments(E "" "RANKS;NODES;CLUSTER;EXPECT;TIMEOUT;PROGRAM" "ARGS" ${ARGN})
  if(NOT E_PROGRAM)
    set(E_PROGRAM train_example)
  endif()
  # The job's time limit (simrun --timeout).  A hung job ends there, so hang scenarios
  # set a short one; a job that ends by itself gets room for a loaded host (a 16-rank
  # alltoall under the probe took 26 s to 40 s), and run_scenario.py fails it, naming the limit, if it
  # is cut short all the same.
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 150)
  endif()
  add_test(NAME analyzer_e2e_${name}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_scenario.py
      --bin-dir ${CMAKE_BINARY_DIR}/bin --sim-lib-dir ${RINGSIDE_SIM_LIB_DIR}
      --work-dir ${CMAKE_CURRENT_BINARY_DIR}/e2e_${name}
      --ranks ${E_RANKS} --nodes ${E_NODES} --cluster "${E_CLUSTER}" --expect "${E_EXPECT}" --timeout ${E_TIMEOUT} --program ${E_PROGRAM}
      -- ${E_ARGS})
  # The culprit must stand out from CPU contention on 2 cores: run these alone.
  set_tests_properties(analyzer_e2e_${name} PROPERTIES TIMEOUT 300 LABELS "analyzer;e2e" RUN_SERIAL TRUE)
endfunction()

if(TARGET simrun AND TARGET train_example AND TARGET ringside_launcher)
  include(${CMAKE_CURRENT_SOURCE_DIR}/e2e/scenarios.cmake OPTIONAL)
else()
  message(STATUS "ringside: analyzer end-to-end scenarios need simrun, train_example and ringside_launcher; not registered yet")
endif()

# `ringside watch` follows a running job and reports its hang live.
if(TARGET simrun AND TARGET train_example AND TARGET ringside_launcher)
  add_test(NAME analyzer_e2e_watch_hang
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/watch_scenario.py
      --bin-dir ${CMAKE_BINARY_DIR}/bin --sim-lib-dir ${RINGSIDE_SIM_LIB_DIR}
      --work-dir ${CMAKE_CURRENT_BINARY_DIR}/e2e_watch_hang
      --cluster ${PROJECT_SOURCE_DIR}/examples/scenarios/stop.json)
  set_tests_properties(analyzer_e2e_watch_hang PROPERTIES TIMEOUT 600 LABELS "analyzer;e2e" RUN_SERIAL TRUE)
endif()

# The HTML report of the demo's job in headless Chromium (Debian's chromium, installed
# by scripts/lib.sh): no script errors, the culprit's cell, its timeline and the link
# matrix drawn, hostile names kept as text; the screenshot stays in the build tree.
if(TARGET simrun AND TARGET train_example AND TARGET ringside_launcher)
  add_test(NAME analyzer_html_browser
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/html_browser_test.py
      --bin-dir ${CMAKE_BINARY_DIR}/bin --sim-lib-dir ${RINGSIDE_SIM_LIB_DIR}
      --work-dir ${CMAKE_CURRENT_BINARY_DIR}/html_browser
      --cluster ${PROJECT_SOURCE_DIR}/examples/scenarios/straggler_gpu.json)
  set_tests_properties(analyzer_html_browser PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77
    LABELS "analyzer;e2e;browser" RUN_SERIAL TRUE)
endif()

# `ringside diff` of the demo with and without its straggler, and its Perfetto export.
if(TARGET simrun AND TARGET train_example AND TARGET ringside_launcher)
  add_test(NAME analyzer_e2e_diff_demo
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/diff_demo.py
      --bin-dir ${CMAKE_BINARY_DIR}/bin --sim-lib-dir ${RINGSIDE_SIM_LIB_DIR}
      --work-dir ${CMAKE_CURRENT_BINARY_DIR}/e2e_diff_demo
      --scenarios ${PROJECT_SOURCE_DIR}/examples/scenarios)
  set_tests_properties(analyzer_e2e_diff_demo PROPERTIES TIMEOUT 900 LABELS "analyzer;e2e" RUN_SERIAL TRUE)
endif()
