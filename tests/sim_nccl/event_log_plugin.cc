// An NCCL profiler plugin for tests: prints every call it gets on stderr, one
// line each ("prof: ..."), so a test can check what the sim's libnccl reports.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ringside/nccl_profiler_abi.h"

namespace {

using namespace ringside::nccl_profiler;

struct Handle {
  uint64_t type;
  int peer;
  int is_send;
};

void say(const std::string& line) {
  const std::string s = "prof: " + line + "\n";
  [[maybe_unused]] ssize_t n = write(STDERR_FILENO, s.data(), s.size());
}

const char* type_name(uint64_t t) {
  switch (t) {
    case kGroup:
      return "group";
    case kColl:
      return "coll";
    case kP2p:
      return "p2p";
    case kProxyOp:
      return "proxyop";
    case kProxyStep:
      return "proxystep";
    default:
      return "other";
  }
}

NcclResult init(void** context, uint64_t comm_id, int* mask, const char*, int n_nodes, int nranks,
                int rank, DebugLogger) {
  *context = reinterpret_cast<void*>(comm_id | 1);
  *mask = static_cast<int>(kProxyOp | kProxyStep);
  say("init nranks=" + std::to_string(nranks) + " rank=" + std::to_string(rank) +
      " nodes=" + std::to_string(n_nodes));
  return 0;
}

NcclResult start(void*, void** handle, EventDescrV5* d) {
  auto* h = new Handle{d->type, -1, 0};
  std::string line = std::string("start ") + type_name(d->type);
  if (d->type == kProxyOp) {
    h->peer = d->proxy_op.peer;
    h->is_send = d->proxy_op.is_send;
    const bool parent_ok = d->parent != nullptr && static_cast<Handle*>(d->parent)->type == kColl;
    line += " peer=" + std::to_string(d->proxy_op.peer) +
            " send=" + std::to_string(d->proxy_op.is_send) +
            " channel=" + std::to_string(d->proxy_op.channel_id) +
            " steps=" + std::to_string(d->proxy_op.n_steps) +
            " pid_ok=" + std::to_string(d->proxy_op.pid == getpid()) +
            " parent_coll=" + std::to_string(parent_ok);
  } else if (d->type == kProxyStep) {
    const bool parent_ok =
        d->parent != nullptr && static_cast<Handle*>(d->parent)->type == kProxyOp;
    line +=
        " step=" + std::to_string(d->proxy_step.step) + " parent_op=" + std::to_string(parent_ok);
  } else if (d->type == kColl) {
    line += std::string(" func=") + (d->coll.func ? d->coll.func : "?");
  }
  say(line);
  *handle = h;
  return 0;
}

NcclResult stop(void* handle) {
  auto* h = static_cast<Handle*>(handle);
  say(std::string("stop ") + type_name(h->type));
  delete h;
  return 0;
}

NcclResult record(void* handle, int state, StateArgs* args) {
  auto* h = static_cast<Handle*>(handle);
  say(std::string("state ") + type_name(h->type) + " " + std::to_string(state) +
      " bytes=" + std::to_string(args ? args->proxy_step.trans_size : 0));
  return 0;
}

NcclResult finalize(void*) {
  say("finalize");
  return 0;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ProfilerV5 ncclProfiler_v5 = {"event-log", init, start, stop, record, finalize};
}
