#include "load/rank_file.h"

#include <algorithm>
#include <unordered_map>

#include "load/link_windows.h"
#include "load/rank_tables.h"
#include "load/trace_set.h"
#include "ringside/trace_validate.h"

namespace ringside::analysis {
namespace {

using trace::EventKind;

bool notable(const trace::EventRecord& e) {
  switch (static_cast<EventKind>(e.kind)) {
    case EventKind::kXid:
    case EventKind::kError:
    case EventKind::kWatchdog:
    case EventKind::kSignal:
    case EventKind::kCommAbort:
    case EventKind::kAsyncError:
    case EventKind::kShutdown:
      return true;
    default:
      return false;
  }
}

// Notes, in rows [offset, offset + ops.size()) of the rows from the window's start
// on, the end times of completed unrooted collectives among its first `clock_ops`, and with a
// window where each communicator and channel begins in it.  `me_in`: the rank's comm
// rank by comm id.
void note_window_rows(std::span<const trace::OpRecord> ops, uint64_t offset, size_t clock_ops,
                      bool window, const std::unordered_map<uint64_t, int32_t>& me_in,
                      std::vector<ClockSample>& clock, WindowFirsts& firsts) {
  // A rank's collectives are on a handful of communicators: the lowest sequence number
  // of each is taken here and noted once, instead of looking its entry up for every op.
  constexpr size_t kMaxComms = 32;
  std::vector<std::pair<uint64_t, uint64_t>> lowest;  // comm id -> lowest collective seq
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    if (window && trace::is_p2p(static_cast<trace::OpKind>(op.op))) {
      auto it = me_in.find(op.comm_id);
      firsts.note(op, it == me_in.end() ? -1 : it->second);
    } else if (window) {
      auto it = std::find_if(lowest.begin(), lowest.end(),
                             [&](const auto& c) { return c.first == op.comm_id; });
      if (it != lowest.end()) {
        it->second = std::min(it->second, op.seq);
      } else if (lowest.size() < kMaxComms) {
        lowest.emplace_back(op.comm_id, op.seq);
      } else {
        firsts.note_seq(op.comm_id, op.seq);
      }
    }
    if (offset + i >= clock_ops) {
      if (!window) break;
      continue;
    }
    // A rooted collective ends on its members apart (a broadcast's root first, the
    // chain's tail last): its ends would be taken for clock offsets.
    const auto kind = static_cast<trace::OpKind>(op.op);
    if (trace::is_p2p(kind) || trace::is_rooted(kind)) continue;
    if (op.status != static_cast<uint8_t>(trace::OpStatus::kComplete)) continue;
    int64_t t_end = op.t_dev_end_ns != trace::kUnknownTime ? op.t_dev_end_ns : op.t_exit_ns;
    if (t_end == trace::kUnknownTime) continue;
    clock.push_back({op.comm_id, op.seq, t_end});
  }
  for (const auto& [comm_id, seq] : lowest) firsts.note_seq(comm_id, seq);
}

// Reads the ops a window of the file begins with (the whole file's first
// `clock_ops` without one) and notes them (note_window_rows).
Status read_window_start(const trace::TraceReader& reader, const RankFile& ri, size_t clock_ops,
                         bool window, const std::unordered_map<uint64_t, int32_t>& me_in,
                         std::vector<ClockSample>& clock, WindowFirsts& firsts) {
  // Clock offsets are constant over a job, so its first ops (the window's) suffice;
  // every read costs a chunk decompression, so one read unless the window needs more.
  const uint64_t end =
      window ? ri.op_count : std::min<uint64_t>(ri.op_count, ri.first_row + clock_ops);
  if (ri.first_row >= end) return {};
  const uint64_t batch = window ? std::max<uint64_t>(clock_ops, 8192) : clock_ops;
  std::vector<trace::OpRecord> buf(
      static_cast<size_t>(std::clamp<uint64_t>(batch, 1, end - ri.first_row)));
  for (uint64_t first = ri.first_row; first < end;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - first));
    auto got = reader.read_ops(first, std::span<trace::OpRecord>(buf.data(), n));
    if (!got.ok()) return got.status();
    if (got.value() == 0) break;
    note_window_rows(std::span<const trace::OpRecord>(buf.data(), got.value()),
                     first - ri.first_row, clock_ops, window, me_in, clock, firsts);
    first += got.value();
  }
  return {};
}

}  // namespace

RankFile read_rank_file(const trace::TraceDirEntry& entry, int64_t world_size,
                        const LoadOptions& options) {
  RankFile f;
  f.rank = entry.rank;
  f.path = entry.path;
  auto opened = trace::open_trace(entry.path, options.reader_cache);
  if (!opened.ok()) {
    f.open_error = opened.message();
    return f;
  }
  const trace::TraceReader& reader = *opened.value();
  const trace::TraceMeta& m = reader.meta();
  // The comm table decides who is who: a file whose table is unreadable or
  // out of range is not used at all (its rank is analyzed as missing).
  // Kept between calls, only the rows appended since are read.
  Status comms_ok;
  if (options.tables_cache != nullptr) {
    auto held = options.tables_cache->update_comms(reader, world_size);
    if (held.ok()) f.comms = *held.value();
    comms_ok = held.ok() ? Status{} : held.status();
  } else {
    comms_ok = update_comm_rows(reader, world_size, f.comms);
  }
  if (!comms_ok.ok()) {
    f.comms = {};
    f.comms_error = comms_ok.message();
    if (options.reader_cache != nullptr) options.reader_cache->forget(entry.path);
    return f;
  }
  f.node = m.node.empty() ? m.hostname : m.node;
  f.local_rank = m.local_rank;
  f.gpu_device = m.gpu_device;
  f.gpu_name = m.gpu_name;
  f.gpu_uuid = m.gpu_uuid;
  f.gpu_pci_bus_id = m.gpu_pci_bus_id;
  f.pid = m.pid;
  f.producer = m.producer;
  f.simulated = m.simulated != 0;
  f.clock_realtime_ns = m.clock_realtime_ns;
  f.clock_monotonic_ns = m.clock_monotonic_ns;

  auto fail = [&](const Status& s) {
    if (options.reader_cache != nullptr) options.reader_cache->forget(entry.path);
    f.errors.push_back(s.message());
  };
  const bool window = options.window_ops > 0;
  f.op_count = reader.op_count();
  f.first_row = window_first_row(f.op_count, options.window_ops);
  if (auto e = reader.events(); e.ok()) {
    for (const auto& ev : e.value()) {
      if (!trace::plausible_time(ev.t_ns)) {
        fail(Status::error(entry.path + ": event time " + std::to_string(ev.t_ns) +
                           " is out of range (corrupt /events)"));
        break;
      }
      if (!notable(ev)) continue;
      if (static_cast<EventKind>(ev.kind) == EventKind::kShutdown) f.shutdown = true;
      if (static_cast<EventKind>(ev.kind) == EventKind::kSignal) f.last_signal = ev.value;
      if (f.events.size() < 256) f.events.push_back(ev);
    }
  } else {
    fail(e.status());
  }
  // /stats, /pending, /gpu_samples: with a cache, only what is new.
  RankTables whole;
  whole.with_series = true;
  const RankTables* tables = &whole;
  if (options.tables_cache != nullptr) {
    auto updated = options.tables_cache->update(reader);
    tables = updated.ok() ? updated.value() : nullptr;
    if (!updated.ok()) fail(updated.status());
  } else if (Status s = update_rank_tables(reader, whole); !s.ok()) {
    tables = nullptr;
    fail(s);
  }
  if (tables != nullptr) {
    f.last_flush_local = tables->last_flush_local;
    f.run_delay = tables->run_delay;
    f.ops_dropped = tables->ops_dropped;
    f.probe_cpu_ns = tables->last_flush.probe_cpu_ns;
    f.pending = tables->pending;
    f.gpu = tables->gpu.summary();
    f.gpu.series = std::move(whole.series);
  }
  if (options.tables_cache != nullptr) {
    auto held = options.tables_cache->update_links(reader, world_size);
    if (held.ok()) {
      f.links = *held.value();
    } else {
      fail(held.status());
    }
  } else {
    LinkWindowSums sums;
    if (Status s = update_link_rows(reader, world_size, sums); s.ok()) {
      f.links = sums.summed();
    } else {
      fail(s);
    }
  }
  std::unordered_map<uint64_t, int32_t> me_in;
  for (const auto& rec : f.comms) me_in[rec.comm_id] = rec.rank;
  if (window && options.row_cache != nullptr) {
    // The window's rows are held between calls: only rows appended since are read.
    if (Status s = options.row_cache->update(entry.path, reader, f.first_row, f.op_count);
        !s.ok()) {
      fail(s);
    } else {
      // The clock samples of the window's first rows; the lowest sequence numbers are
      // kept by the cache as its rows come and go (load/sliding_lowest.h).
      const auto rows = options.row_cache->rows(entry.path);
      note_window_rows(rows.first(std::min(rows.size(), options.clock_sample_window)), 0,
                       options.clock_sample_window, false, me_in, f.clock_samples, f.firsts);
      options.row_cache->note_firsts(entry.path, me_in, f.firsts);
    }
  } else if (Status s = read_window_start(reader, f, options.clock_sample_window, window, me_in,
                                          f.clock_samples, f.firsts);
             !s.ok()) {
    fail(s);
  }
  if (window) {
    for (const auto& op : f.pending) {
      auto me = me_in.find(op.comm_id);
      f.firsts.note(op, me == me_in.end() ? -1 : me->second);
    }
  }
  return f;
}

}  // namespace ringside::analysis
