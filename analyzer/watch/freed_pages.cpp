#include "watch/freed_pages.h"

#include <sys/types.h>

#include <cstddef>
#include <string>

// jemalloc's control interface, resolved only when the executable is linked with it (weak:
// null otherwise).  Declared here rather than from <jemalloc/jemalloc.h>, whose own
// declarations of malloc and free clash with the C library's in C++.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace ringside::analysis::watch {

bool keep_freed_pages(double seconds) {
  if (mallctl == nullptr || !(seconds > 0)) return false;
  auto ms = static_cast<ssize_t>(seconds * 1000);
  // Arenas made from now on...
  if (mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &ms, sizeof ms) != 0) return false;
  // ... and those there are (one per thread that allocated, at most; an index never
  // used has no arena, and refuses).
  unsigned arenas = 0;
  size_t size = sizeof arenas;
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return false;
  bool any = false;
  for (unsigned i = 0; i < arenas; ++i) {
    const std::string name = "arena." + std::to_string(i) + ".dirty_decay_ms";
    any = mallctl(name.c_str(), nullptr, nullptr, &ms, sizeof ms) == 0 || any;
  }
  return any;
}

}  // namespace ringside::analysis::watch
