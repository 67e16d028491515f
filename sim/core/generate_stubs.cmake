# ringsim_generate_stubs(<list> <out.c>): a weak "not supported" definition for every function
# the real library exports (names in <list>, one per line). Implemented functions are strong
# definitions elsewhere and win at link time, so the sim exports the real library's full set:
# a binary linked against the real library never fails to load or bind on the sim.
function(ringsim_generate_stubs list_file out_file)
  file(STRINGS "${list_file}" _names)
  set(_text "/* Generated from ${list_file} by generate_stubs.cmake; do not edit. */\n")
  string(APPEND _text "int rsim_unsupported(const char* name, int* warned);\n")
  string(APPEND _text "#define RINGSIM_STUB(f) __attribute__((weak)) int f(void) { static int w; return rsim_unsupported(#f, &w); }\n")
  foreach(_n IN LISTS _names)
    if(_n MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      string(APPEND _text "RINGSIM_STUB(${_n})\n")
    endif()
  endforeach()
  file(CONFIGURE OUTPUT "${out_file}" CONTENT "${_text}" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${list_file}")
endfunction()
