#include "profiler.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "comm.h"
#include "last_error.h"

namespace ringside::sim::nccl::profiler {
namespace {

using namespace nccl_profiler;

struct Plugin {
  const ProfilerV5* v5 = nullptr;
  const ProfilerV4* v4 = nullptr;
  bool any() const { return v5 != nullptr || v4 != nullptr; }
};

std::atomic<uint64_t> g_mask{0};

void* open_library(const std::string& name) {
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    debug_log(std::string("profiler plugin: could not load ") + name + ": " + dlerror());
  return h;
}

// NCCL_PROFILER_PLUGIN: unset -> libnccl-profiler.so; "none" -> no plugin; a path
// (with '/') as given; a name X -> X, then libnccl-profiler-X.so.
void* open_plugin_library() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env == nullptr || *env == '\0') return open_library("libnccl-profiler.so");
  const std::string v = env;
  if (strcasecmp(env, "none") == 0) return nullptr;
  if (v.find('/') != std::string::npos) return open_library(v);
  if (void* h = open_library(v)) return h;
  return open_library("libnccl-profiler-" + v + ".so");
}

Plugin load_plugin() {
  Plugin p;
  void* lib = open_plugin_library();
  if (lib == nullptr) return p;
  p.v5 = static_cast<const ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  if (p.v5 == nullptr) p.v4 = static_cast<const ProfilerV4*>(dlsym(lib, "ncclProfiler_v4"));
  if (!p.any()) {
    const bool older = dlsym(lib, "ncclProfiler_v3") != nullptr ||
                       dlsym(lib, "ncclProfiler_v2") != nullptr ||
                       dlsym(lib, "ncclProfiler_v1") != nullptr;
    warn(std::string("profiler plugin: ") +
         (older ? "only ncclProfiler_v3..v1 found; the sim drives v5 and v4 only"
                : "no ncclProfiler_v5..v1 symbol in the library named by NCCL_PROFILER_PLUGIN") +
         "; profiling is off");
    dlclose(lib);
    return p;
  }
  const char* name = p.v5 != nullptr ? p.v5->name : p.v4->name;
  debug_log(std::string("profiler plugin ") + (name != nullptr ? name : "(unnamed)") +
            (p.v5 != nullptr ? " (v5)" : " (v4)") + " loaded");
  return p;  // never closed: handles may be in flight until exit
}

const Plugin& plugin() {
  static const Plugin p = load_plugin();
  return p;
}

int distinct_nodes(const Comm& comm) {
  std::set<std::string> names(comm.node_names.begin(), comm.node_names.end());
  return static_cast<int>(names.size());
}

bool live(const Comm& comm) {
  return comm.profiler_live.load(std::memory_order_acquire);
}

}  // namespace

uint64_t mask() {
  return g_mask.load(std::memory_order_relaxed);
}

void comm_init(Comm& comm) {
  const Plugin& p = plugin();
  if (!p.any()) return;
  // As in NCCL, the mask is one per process: the plugin may change it at each init.
  int m = static_cast<int>(g_mask.load());
  void* ctx = nullptr;
  const std::string name = comm.label();
  const NcclResult r = p.v5 != nullptr
                           ? p.v5->init(&ctx, comm.nonce, &m, name.c_str(), distinct_nodes(comm),
                                        comm.nranks, comm.rank, nullptr)
                           : p.v4->init(&ctx, &m, name.c_str(), comm.nonce, distinct_nodes(comm),
                                        comm.nranks, comm.rank, nullptr);
  if (r != 0) {
    debug_log(comm.label() + ": profiler plugin init failed (" + std::to_string(r) +
              "); no events for this communicator");
    return;
  }
  g_mask.store(static_cast<uint32_t>(m));
  comm.profiler_context = ctx;
  comm.profiler_live.store(true, std::memory_order_release);
}

void comm_finalize(Comm& comm) {
  if (!comm.profiler_live.exchange(false)) return;
  const Plugin& p = plugin();
  if (p.v5 != nullptr) p.v5->finalize(comm.profiler_context);
  if (p.v4 != nullptr) p.v4->finalize(comm.profiler_context);
}

void* start(Comm& comm, EventDescrV5& d) {
  if (!live(comm)) return nullptr;
  const Plugin& p = plugin();
  void* h = nullptr;
  if (p.v5 != nullptr) {
    p.v5->start_event(comm.profiler_context, &h, &d);
  } else {
    // v4: a one-byte type, then the same layout.
    EventDescrV4 d4{};
    d4.type = static_cast<uint8_t>(d.type);
    std::memcpy(reinterpret_cast<char*>(&d4) + offsetof(EventDescrV4, parent),
                reinterpret_cast<const char*>(&d) + offsetof(EventDescrV5, parent),
                sizeof d4 - offsetof(EventDescrV4, parent));
    p.v4->start_event(comm.profiler_context, &h, &d4);
  }
  return h;
}

namespace {
void record_state(Comm& comm, void* handle, int state, StateArgs& a) {
  if (handle == nullptr || !live(comm)) return;
  const Plugin& p = plugin();
  if (p.v5 != nullptr) p.v5->record_event_state(handle, state, &a);
  if (p.v4 != nullptr) p.v4->record_event_state(handle, state, &a);
}
}  // namespace

void record(Comm& comm, void* handle, int state, size_t trans_size) {
  StateArgs a{};
  a.proxy_step.trans_size = trans_size;
  record_state(comm, handle, state, a);
}

void record_kernel_stop(Comm& comm, void* handle, uint64_t p_timer) {
  StateArgs a{};
  a.kernel_ch.p_timer = p_timer;
  record_state(comm, handle, kKernelChStop, a);
}

void stop(Comm& comm, void* handle) {
  if (handle == nullptr || !live(comm)) return;
  const Plugin& p = plugin();
  if (p.v5 != nullptr) p.v5->stop_event(handle);
  if (p.v4 != nullptr) p.v4->stop_event(handle);
}

}  // namespace ringside::sim::nccl::profiler
