// Run-time loading of the NVIDIA libraries that are never linked (the CUDA
// driver in the probe, NVML in the probe and nccl_bench), so that the same
// binaries run where they are absent.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace ringside {

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

// The first of `names` the library exports (list newer versioned entry points
// first), or nullptr.
template <typename Fn>
Fn symbol(void* lib, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* sym = dlsym(lib, name)) return reinterpret_cast<Fn>(sym);
  }
  return nullptr;
}

// Sets `fn` to symbol(lib, names); leaves it unchanged when none is found.
template <typename Fn>
void resolve(void* lib, Fn& fn, std::initializer_list<const char*> names) {
  if (Fn found = symbol<Fn>(lib, names)) fn = found;
}

}  // namespace ringside
