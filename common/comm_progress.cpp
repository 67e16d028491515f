#include "comm_progress.h"

#include <algorithm>

namespace ringside::trace {
namespace {

bool same_progress(const ProgressRecord& a, const ProgressRecord& b) {
  return a.comm_id == b.comm_id && a.entered_seq == b.entered_seq &&
         a.completed_seq == b.completed_seq && a.t_entered_ns == b.t_entered_ns &&
         a.t_completed_ns == b.t_completed_ns && a.op_rows == b.op_rows &&
         a.pending_ops == b.pending_ops && a.state == b.state;
}

bool collective(const OpRecord& op) {
  return !is_p2p(static_cast<OpKind>(op.op));
}

// The op of the highest seq entered so far (ties: the later entry).
void note_entered(ProgressRecord& p, const OpRecord& op) {
  if (!collective(op)) return;
  const auto seq = static_cast<int64_t>(op.seq);
  if (seq > p.entered_seq || (seq == p.entered_seq && op.t_enter_ns > p.t_entered_ns)) {
    p.entered_seq = seq;
    p.t_entered_ns = op.t_enter_ns;
  }
}

}  // namespace

CommProgress::Comm& CommProgress::comm(uint64_t id) {
  for (Comm& c : comms_) {
    if (c.now.comm_id == id) return c;
  }
  Comm& c = comms_.emplace_back();
  c.now.comm_id = id;
  c.now.entered_seq = c.now.completed_seq = -1;
  c.now.t_entered_ns = c.now.t_completed_ns = kUnknownTime;
  return c;
}

void CommProgress::note_rows(std::span<const OpRecord> ops) {
  Comm* last = nullptr;
  for (const OpRecord& op : ops) {
    if (last == nullptr || last->now.comm_id != op.comm_id) last = &comm(op.comm_id);
    ProgressRecord& p = last->now;
    ++p.op_rows;
    note_entered(p, op);
    if (!collective(op) || op.status != static_cast<uint8_t>(OpStatus::kComplete)) continue;
    const auto seq = static_cast<int64_t>(op.seq);
    if (seq < p.completed_seq) continue;
    p.completed_seq = seq;
    p.t_completed_ns = op.t_dev_end_ns != kUnknownTime ? op.t_dev_end_ns : op.t_exit_ns;
  }
}

void CommProgress::flush_rows(std::span<const OpRecord> pending, int64_t t_ns, uint64_t flush_index,
                              std::vector<ProgressRecord>& out) {
  // Outstanding counts and states are of this flush alone.
  std::vector<int64_t> oldest(comms_.size(), INT64_MAX);
  for (Comm& c : comms_) {
    c.now.pending_ops = 0;
    c.now.state = 0;
  }
  for (const OpRecord& op : pending) {
    // Ops an abort abandoned are listed in /pending too, but are not outstanding.
    if (op.status != static_cast<uint8_t>(OpStatus::kHostPending) &&
        op.status != static_cast<uint8_t>(OpStatus::kDevicePending))
      continue;
    Comm& c = comm(op.comm_id);
    const size_t i = static_cast<size_t>(&c - comms_.data());
    if (oldest.size() <= i) oldest.resize(i + 1, INT64_MAX);
    ++c.now.pending_ops;
    note_entered(c.now, op);
    if (op.t_enter_ns < oldest[i]) {
      oldest[i] = op.t_enter_ns;
      c.now.state = op.status;
    }
  }
  for (Comm& c : comms_) {
    if (c.ever_written && same_progress(c.now, c.written)) continue;
    c.written = c.now;
    c.ever_written = true;
    ProgressRecord row = c.now;
    row.t_ns = t_ns;
    row.flush_index = flush_index;
    out.push_back(row);
  }
}

}  // namespace ringside::trace
