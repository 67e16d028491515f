#include "ringside/trace_validate.h"

#include <string>

#include "ringside/config_spec.h"

namespace ringside::trace {
namespace {

std::string field(const char* name, int64_t value) {
  return std::string(name) + " = " + std::to_string(value);
}

// -1 (never observed) or a trace-local time within range.
bool time_or_unknown(int64_t t) {
  return t == kUnknownTime || (t >= 0 && t <= kMaxTraceTimeNs);
}

}  // namespace

bool plausible_time(int64_t t_ns) {
  return t_ns >= -kMaxTraceTimeNs && t_ns <= kMaxTraceTimeNs;
}

Status validate_meta(const TraceMeta& m, const std::string& path) {
  auto bad = [&](const std::string& what, const std::string& why) {
    return Status::error(path + ": attribute " + what + " " + why + " (corrupt file)");
  };
  if (m.world_size < 1 || m.world_size > kMaxWorldSize)
    return bad(field("world_size", m.world_size), "is outside 1.." + std::to_string(kMaxWorldSize));
  if (m.rank < 0 || m.rank >= m.world_size)
    return bad(field("rank", m.rank), "is not below world_size " + std::to_string(m.world_size));
  if (m.local_rank < -1 || m.local_rank >= m.world_size)
    return bad(field("local_rank", m.local_rank), "is outside -1..world_size-1");
  if (m.gpu_device < -1 || m.gpu_device > 65535)
    return bad(field("gpu_device", m.gpu_device), "is not a device ordinal");
  if (m.pid < 0 || m.pid > (int64_t{1} << 32)) return bad(field("pid", m.pid), "is not a pid");
  // Between 2001 and 2100: anything else is not a CLOCK_REALTIME reading of a real run.
  if (m.clock_realtime_ns < int64_t{1'000'000'000} * 1'000'000'000 ||
      m.clock_realtime_ns > int64_t{4'102'444'800} * 1'000'000'000)
    return bad(field("clock_realtime_ns", m.clock_realtime_ns), "is not a plausible date");
  if (m.clock_monotonic_ns < 0 || m.clock_monotonic_ns > (int64_t{1} << 62))
    return bad(field("clock_monotonic_ns", m.clock_monotonic_ns), "is out of range");
  if (m.simulated != 0 && m.simulated != 1)
    return bad(field("simulated", m.simulated), "is not 0 or 1");
  if (m.job_id.empty()) return bad("job_id", "is empty");
  // The probe records a Slurm step number or nothing (launcher_identity.cpp).
  if (m.step_id.size() > 10 || m.step_id.find_first_not_of("0123456789") != std::string::npos)
    return bad("step_id '" + config::echo(m.step_id) + "'", "is not a step number");
  return {};
}

Status validate_op(const OpRecord& op) {
  auto bad = [&](const std::string& what) {
    return Status::error("op record of comm " + std::to_string(op.comm_id) + " seq " +
                         std::to_string(op.seq) + ": " + what + " is out of range");
  };
  if (op.op < static_cast<uint8_t>(OpKind::kAllReduce) ||
      op.op > static_cast<uint8_t>(OpKind::kRecv))
    return bad(field("op", op.op));
  if (op.status > static_cast<uint8_t>(OpStatus::kAbandoned))
    return bad(field("status", op.status));
  if (op.seq >= kMaxSeq) return bad("seq = " + std::to_string(op.seq));
  if (op.peer_seq >= kMaxSeq) return bad(field("peer_seq", op.peer_seq));
  if (op.peer < -1) return bad(field("peer", op.peer));
  if (op.count > kMaxOpSize) return bad("count = " + std::to_string(op.count));
  if (op.bytes > kMaxOpSize) return bad("bytes = " + std::to_string(op.bytes));
  // Every producer records -1 for collectives that have neither root nor peer.
  const auto kind = static_cast<OpKind>(op.op);
  const bool unrooted = !is_rooted(kind) && !is_p2p(kind);
  if (unrooted && op.peer != -1) return bad(field("peer", op.peer) + " of an unrooted collective");
  if (!time_or_unknown(op.t_enter_ns)) return bad(field("t_enter_ns", op.t_enter_ns));
  if (!time_or_unknown(op.t_exit_ns)) return bad(field("t_exit_ns", op.t_exit_ns));
  if (!time_or_unknown(op.t_dev_start_ns)) return bad(field("t_dev_start_ns", op.t_dev_start_ns));
  if (!time_or_unknown(op.t_dev_end_ns)) return bad(field("t_dev_end_ns", op.t_dev_end_ns));
  if (op.t_enter_ns == kUnknownTime && op.t_dev_start_ns == kUnknownTime)
    return bad("t_enter_ns and t_dev_start_ns both unknown");
  if (op.t_exit_ns != kUnknownTime && op.t_enter_ns != kUnknownTime && op.t_exit_ns < op.t_enter_ns)
    return bad("t_exit_ns before t_enter_ns");
  if (op.t_dev_end_ns != kUnknownTime && op.t_dev_start_ns != kUnknownTime &&
      op.t_dev_end_ns < op.t_dev_start_ns)
    return bad("t_dev_end_ns before t_dev_start_ns");
  return {};
}

Status validate_comm(const CommRecord& c, int64_t world_size) {
  auto bad = [&](const std::string& what) {
    return Status::error("comm table row of comm " + std::to_string(c.comm_id) + ": " + what +
                         " is out of range");
  };
  if (c.nranks < 1 || c.nranks > world_size * kMaxCommRanksPerProcess)
    return bad(field("nranks", c.nranks) + " (world_size " + std::to_string(world_size) +
               ", at most " + std::to_string(kMaxCommRanksPerProcess) + " ranks per process)");
  if (c.rank < 0 || c.rank >= c.nranks) return bad(field("rank", c.rank));
  if (c.color < -1) return bad(field("color", c.color));
  if (!plausible_time(c.t_ns)) return bad(field("t_ns", c.t_ns));
  return {};
}

Status validate_link(const LinkRecord& l, int64_t world_size) {
  auto bad = [&](const std::string& what) {
    return Status::error("/links row of comm " + std::to_string(l.comm_hash) + ": " + what +
                         " is out of range");
  };
  if (l.nranks < 2 || l.nranks > world_size * kMaxCommRanksPerProcess)
    return bad(field("nranks", l.nranks) + " (world_size " + std::to_string(world_size) +
               ", at most " + std::to_string(kMaxCommRanksPerProcess) + " ranks per process)");
  if (l.rank < 0 || l.rank >= l.nranks) return bad(field("rank", l.rank));
  if (l.peer < 0 || l.peer >= l.nranks || l.peer == l.rank) return bad(field("peer", l.peer));
  if (l.n_nodes < 0 || l.n_nodes > l.nranks) return bad(field("n_nodes", l.n_nodes));
  if (l.is_send > 1) return bad(field("is_send", l.is_send));
  if (l.source > 1) return bad(field("source", l.source));
  if (!plausible_time(l.t_ns)) return bad(field("t_ns", l.t_ns));
  for (int64_t v : {l.active_ns, l.net_ns, l.peer_wait_ns, l.gpu_wait_ns, l.best_step_ns}) {
    if (v < 0 || v > kMaxTraceTimeNs) return bad("a time counter (" + std::to_string(v) + ")");
  }
  if (l.ops > kMaxSeq || l.steps > (kMaxSeq << 8)) return bad(field("ops/steps", l.steps));
  return {};
}

Status validate_progress(const ProgressRecord& p) {
  auto bad = [&](const std::string& what) {
    return Status::error("/progress row of comm " + std::to_string(p.comm_id) + ": " + what +
                         " is out of range");
  };
  const auto max_seq = static_cast<int64_t>(kMaxSeq);
  if (p.entered_seq < -1 || p.entered_seq > max_seq)
    return bad(field("entered_seq", p.entered_seq));
  if (p.completed_seq < -1 || p.completed_seq > max_seq)
    return bad(field("completed_seq", p.completed_seq));
  if (p.state > 2) return bad(field("state", p.state));
  if (p.pending_ops >= kMaxSeq) return bad(field("pending_ops", p.pending_ops));
  for (int64_t t : {p.t_ns, p.t_entered_ns, p.t_completed_ns}) {
    if (!plausible_time(t)) return bad("a time (" + std::to_string(t) + ")");
  }
  return {};
}

}  // namespace ringside::trace
