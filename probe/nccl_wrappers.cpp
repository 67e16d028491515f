// The exported NCCL entry points, all generated from RINGSIDE_NCCL_API so
// that they have one shape:
//   1. the real function, resolved once (function-local static);
//   2. straight to NCCL when the probe is off, closed, in a forked child, or
//      when NCCL calls its own API from inside a probe hook (re-entry);
//   3. otherwise the hook, which calls the real function exactly once and
//      returns its result unchanged.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>

#include "hooks.h"
#include "real_nccl.h"
#include "runtime.h"

#define RINGSIDE_EXPORT __attribute__((visibility("default")))
#define RINGSIDE_COMMA_ARGS(...) __VA_OPT__(, ) __VA_ARGS__

namespace ringside::probe {

namespace {

const char* const kApiNames[] = {
#define RINGSIDE_API_NAME(name, hook, params, args) "nccl" #name,
    RINGSIDE_NCCL_API(RINGSIDE_API_NAME)
#undef RINGSIDE_API_NAME
};

std::atomic<bool> g_missing_warned[kApiCount];

void* lookup(const char* name) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  // NCCL may have been loaded with RTLD_LOCAL as a dependency of a dlopen'd library.
  if (void* lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD)) {
    void* f = dlsym(lib, name);
    dlclose(lib);  // drops only the reference NOLOAD took
    return f;
  }
  return nullptr;
}

}  // namespace

const char* api_name(Api api) {
  return kApiNames[static_cast<int>(api)];
}

void* resolve_nccl(Api api) noexcept {
  char name[64];
  std::snprintf(name, sizeof name, "p%s", api_name(api));
  if (void* f = lookup(name)) return f;
  return lookup(api_name(api));
}

ncclResult_t missing_nccl_function(Api api) noexcept {
  if (!g_missing_warned[static_cast<int>(api)].exchange(true)) {
    std::fprintf(stderr,
                 "ringside probe: error: %s is not provided by any loaded NCCL library (looked for "
                 "p%s and %s after the probe); the call returns ncclSystemError. Check that "
                 "libnccl.so.2 (NCCL >= 2.28) is on the library path.\n",
                 api_name(api), api_name(api), api_name(api));
  }
  return ncclSystemError;
}

const RealNccl& real_nccl() noexcept {
  static const RealNccl real = [] {
    RealNccl r;
    r.CommCount = reinterpret_cast<decltype(r.CommCount)>(resolve_nccl(Api::kCommCount));
    r.CommUserRank = reinterpret_cast<decltype(r.CommUserRank)>(resolve_nccl(Api::kCommUserRank));
    r.CommCuDevice = reinterpret_cast<decltype(r.CommCuDevice)>(resolve_nccl(Api::kCommCuDevice));
    r.GetVersion = reinterpret_cast<decltype(r.GetVersion)>(resolve_nccl(Api::kGetVersion));
    return r;
  }();
  return real;
}

}  // namespace ringside::probe

#define RINGSIDE_DEFINE_WRAPPER(name, hook, params, args)                    \
  extern "C" RINGSIDE_EXPORT ncclResult_t nccl##name params {                \
    using namespace ::ringside::probe;                                       \
    using Fn = decltype(&pnccl##name);                                       \
    static const Fn real = reinterpret_cast<Fn>(resolve_nccl(Api::k##name)); \
    if (real == nullptr) return missing_nccl_function(Api::k##name);         \
    if (!enter_probe()) return real args;                                    \
    ProbeScope scope;                                                        \
    return hooks::hook(real RINGSIDE_COMMA_ARGS args);                       \
  }

RINGSIDE_NCCL_API(RINGSIDE_DEFINE_WRAPPER)

#undef RINGSIDE_DEFINE_WRAPPER
