// Run-time loading shared by the probe's CUDA driver and NVML loaders: the
// probe never links them, so the same binary runs where they are absent.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace ringside::probe {

// dlopen(soname) with RTLD_NOW | RTLD_LOCAL; on failure returns nullptr and sets
// `error` to "dlopen(<soname>) failed: <reason>".
inline void* open_library(const char* soname, std::string& error) {
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    error = std::string("dlopen(") + soname + ") failed: " + (err ? err : "unknown error");
  }
  return lib;
}

// Sets `fn` to the first of `names` the library exports (list newer versioned
// entry points first); leaves it unchanged when none is found.
template <typename Fn>
void resolve(void* lib, Fn& fn, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* sym = dlsym(lib, name)) {
      fn = reinterpret_cast<Fn>(sym);
      return;
    }
  }
}

}  // namespace ringside::probe
