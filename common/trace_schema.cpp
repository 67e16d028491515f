#include "ringside/trace_schema.h"

namespace ringside::trace {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllToAll:
      return "alltoall";
    case OpKind::kGather:
      return "gather";
    case OpKind::kScatter:
      return "scatter";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kUnknown:
      break;
  }
  return "unknown";
}

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kXid:
      return "xid";
    case EventKind::kWarning:
      return "warning";
    case EventKind::kError:
      return "error";
    case EventKind::kWatchdog:
      return "watchdog";
    case EventKind::kSignal:
      return "signal";
    case EventKind::kCommDestroy:
      return "comm_destroy";
    case EventKind::kCommAbort:
      return "comm_abort";
    case EventKind::kAsyncError:
      return "async_error";
    case EventKind::kShutdown:
      return "shutdown";
  }
  return "unknown";
}

}  // namespace ringside::trace
