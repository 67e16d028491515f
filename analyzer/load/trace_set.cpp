#include "load/trace_set.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ringside/trace_reader.h"
#include "ringside/trace_validate.h"

namespace ringside::analysis {
namespace {

std::string hex_id(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
}

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

// /links: every row validated, then summed over its flush windows.
Status read_links(const trace::TraceReader& reader, int64_t world_size,
                  std::vector<trace::LinkRecord>& out) {
  auto rows = reader.links();
  if (!rows.ok()) return rows.status();
  for (const trace::LinkRecord& l : rows.value()) {
    if (Status v = trace::validate_link(l, world_size); !v.ok())
      return Status::error(reader.path() + ": " + v.message());
  }
  out = sum_link_windows(rows.value());
  return {};
}

// Notes, in rows [offset, offset + ops.size()) of the rows from the window's start
// on, the end times of completed collectives among its first `clock_ops`, and with a
// window where each communicator and channel begins in it.  `me_in`: the rank's comm
// rank by comm id.
void note_window_rows(std::span<const trace::OpRecord> ops, uint64_t offset, size_t clock_ops,
                      bool window, const std::unordered_map<uint64_t, int32_t>& me_in,
                      std::vector<ClockSample>& clock, WindowFirsts& firsts) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    if (window) {
      auto it = me_in.find(op.comm_id);
      firsts.note(op, it == me_in.end() ? -1 : it->second);
    }
    if (offset + i >= clock_ops) {
      if (!window) break;
      continue;
    }
    if (trace::is_p2p(static_cast<trace::OpKind>(op.op))) continue;
    if (op.status != static_cast<uint8_t>(trace::OpStatus::kComplete)) continue;
    int64_t t_end = op.t_dev_end_ns != trace::kUnknownTime ? op.t_dev_end_ns : op.t_exit_ns;
    if (t_end == trace::kUnknownTime) continue;
    clock.push_back({op.comm_id, op.seq, t_end});
  }
}

// Reads the ops a window of the file begins with (the whole file's first
// `clock_ops` without one) and notes them (note_window_rows).
Status read_window_start(const trace::TraceReader& reader, const RankInfo& ri, size_t clock_ops,
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

std::vector<trace::LinkRecord> sum_link_windows(std::span<const trace::LinkRecord> rows) {
  std::vector<trace::LinkRecord> out;
  std::map<std::tuple<uint64_t, int32_t, int32_t, int32_t, uint8_t, uint8_t, uint8_t>, size_t>
      where;
  // Each window's fastest step, per row of `out`: the row keeps the median window's,
  // so one step timed wrong (a clock read delayed by preemption) does not set it.
  std::vector<std::vector<std::pair<uint64_t, int64_t>>> bests;
  for (const trace::LinkRecord& l : rows) {
    auto [it, fresh] = where.emplace(
        std::tuple(l.comm_hash, l.nranks, l.rank, l.peer, l.channel, l.is_send, l.source),
        out.size());
    if (fresh) bests.emplace_back();
    if (trace::best_step_candidate(l.best_step_bytes, l.best_step_ns))
      bests[it->second].emplace_back(l.best_step_bytes, l.best_step_ns);
    if (fresh) {
      out.push_back(l);
      continue;
    }
    trace::LinkRecord& t = out[it->second];
    t.t_ns = std::max(t.t_ns, l.t_ns);
    t.n_nodes = std::max(t.n_nodes, l.n_nodes);
    t.ops += l.ops;
    t.steps += l.steps;
    t.bytes += l.bytes;
    // Each row is range-checked, their sum is not: saturate instead of overflowing.
    auto add = [](int64_t& a, int64_t b) {
      a = b > std::numeric_limits<int64_t>::max() - a ? std::numeric_limits<int64_t>::max() : a + b;
    };
    add(t.active_ns, l.active_ns);
    add(t.net_ns, l.net_ns);
    add(t.peer_wait_ns, l.peer_wait_ns);
    add(t.gpu_wait_ns, l.gpu_wait_ns);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    auto& b = bests[i];
    out[i].best_step_bytes = 0;
    out[i].best_step_ns = 0;
    if (b.empty()) continue;
    auto faster = [](const std::pair<uint64_t, int64_t>& x, const std::pair<uint64_t, int64_t>& y) {
      return trace::faster_step(x.first, x.second, y.first, y.second);
    };
    auto mid = b.begin() + static_cast<long>(b.size() / 2);
    std::nth_element(b.begin(), mid, b.end(), faster);
    out[i].best_step_bytes = mid->first;
    out[i].best_step_ns = mid->second;
  }
  return out;
}

std::string CommInfo::id_hex() const {
  return hex_id(id);
}

int TraceSet::comm_rank_of(const CommInfo& c, int64_t global_rank) const {
  for (size_t i = 0; i < c.members.size(); ++i) {
    if (c.members[i] == global_rank) return static_cast<int>(i);
  }
  return -1;
}

void count_comm_members(TraceSet& set) {
  for (auto& ci : set.comms) {
    ci.present = 0;
    ci.nodes.clear();
    for (int64_t g : ci.members) {
      if (g < 0 || g >= static_cast<int64_t>(set.ranks.size()) ||
          !set.ranks[static_cast<size_t>(g)].has_file)
        continue;
      ++ci.present;
      int node = set.ranks[static_cast<size_t>(g)].node_index;
      if (std::find(ci.nodes.begin(), ci.nodes.end(), node) == ci.nodes.end())
        ci.nodes.push_back(node);
    }
    std::sort(ci.nodes.begin(), ci.nodes.end());
    ci.intra_node = ci.nodes.size() <= 1;
  }
}

bool exclude_unreadable_ranks(TraceSet& set) {
  bool any = false;
  for (auto& ri : set.ranks) {
    if (!ri.has_file || ri.read_error.empty()) continue;
    ri.has_file = false;
    set.bad_ranks.push_back({ri.rank, ri.read_error});
    any = true;
  }
  if (any) count_comm_members(set);
  return any;
}

Result<TraceSet> load_trace_set(const std::string& dir, const LoadOptions& options,
                                Progress& progress) {
  auto listing = trace::list_trace_dir(dir, options.step, options.dir_cache);
  if (!listing.ok()) return listing.status();
  TraceSet set;
  set.dir = dir;
  set.job_id = listing->job_id;
  set.step_id = listing->step_id;
  set.world_size = listing->world_size;
  for (const auto& bad : listing->bad_files) {
    set.warnings.push_back(bad + " (skipped; its rank is analyzed as missing)");
  }
  for (const auto& f : listing->files) {
    set.world_size = std::max(set.world_size, f.rank + 1);
  }
  set.ranks.resize(static_cast<size_t>(set.world_size));
  for (int64_t r = 0; r < set.world_size; ++r) set.ranks[static_cast<size_t>(r)].rank = r;

  std::map<uint64_t, CommInfo> comms;
  std::map<uint64_t, int64_t> first_claimant;  // comm id -> first rank whose file named it
  struct Conflict {
    int64_t a, b;
    std::string what;
  };
  std::vector<Conflict> conflicts;
  std::map<std::string, int> node_index;
  int64_t base = std::numeric_limits<int64_t>::max();
  const bool window = options.window_ops > 0;
  std::vector<WindowFirsts> firsts(set.ranks.size());
  size_t done = 0;
  for (const auto& entry : listing->files) {
    progress.update("reading metadata", ++done, listing->files.size());
    RankInfo& ri = set.ranks[static_cast<size_t>(entry.rank)];
    auto opened = trace::open_trace(entry.path, options.reader_cache);
    if (!opened.ok()) {
      set.warnings.push_back(opened.message() + " (skipped; its rank is analyzed as missing)");
      continue;
    }
    const trace::TraceReader& reader = *opened.value();
    const trace::TraceMeta& m = reader.meta();
    // The comm table decides who is who: a file whose table is unreadable or
    // out of range is not used at all (its rank is analyzed as missing).
    auto comm_rows = reader.comms();
    Status comms_ok = comm_rows.ok() ? Status{} : comm_rows.status();
    if (comms_ok.ok()) {
      for (const auto& rec : comm_rows.value()) {
        comms_ok = trace::validate_comm(rec, set.world_size);
        if (!comms_ok.ok()) break;
      }
    }
    if (!comms_ok.ok()) {
      set.warnings.push_back(entry.path + ": " + comms_ok.message() +
                             " (corrupt file; skipped, its rank is analyzed as missing)");
      set.bad_ranks.push_back({entry.rank, comms_ok.message()});
      if (options.reader_cache != nullptr) options.reader_cache->forget(entry.path);
      continue;
    }
    ri.has_file = true;
    ri.path = entry.path;
    ri.node = m.node.empty() ? m.hostname : m.node;
    ri.local_rank = m.local_rank;
    ri.gpu_device = m.gpu_device;
    ri.gpu_name = m.gpu_name;
    ri.gpu_uuid = m.gpu_uuid;
    ri.gpu_pci_bus_id = m.gpu_pci_bus_id;
    ri.pid = m.pid;
    ri.producer = m.producer;
    ri.simulated = m.simulated != 0;
    set.simulated = set.simulated || ri.simulated;
    ri.shift_ns = m.clock_realtime_ns;  // made relative to the job's base below
    ri.clock_monotonic_ns = m.clock_monotonic_ns;
    base = std::min(base, m.clock_realtime_ns);
    auto [it, inserted] = node_index.emplace(ri.node, static_cast<int>(set.nodes.size()));
    if (inserted) {
      set.nodes.push_back(ri.node);
      set.node_ranks.emplace_back();
    }
    ri.node_index = it->second;
    set.node_ranks[static_cast<size_t>(ri.node_index)].push_back(ri.rank);

    auto fail = [&](const Status& s) {
      if (options.reader_cache != nullptr) options.reader_cache->forget(entry.path);
      ri.read_error = s.message();
      set.warnings.push_back(s.message() + " (rank " + std::to_string(ri.rank) +
                             ": not used, analyzed as missing)");
    };
    ri.op_count = reader.op_count();
    ri.first_row = window_first_row(ri.op_count, options.window_ops);
    {
      for (const auto& rec : comm_rows.value()) {
        CommInfo& ci = comms[rec.comm_id];
        // Files that disagree about a communicator cannot both be right, and
        // which one is wrong cannot be told: neither is used.
        auto [first, new_comm] = first_claimant.emplace(rec.comm_id, ri.rank);
        if (!new_comm && ci.nranks != rec.nranks) {
          conflicts.push_back({first->second, ri.rank,
                               "disagree on the size of comm " + hex_id(rec.comm_id) + " (" +
                                   std::to_string(ci.nranks) + " and " +
                                   std::to_string(rec.nranks) + " ranks)"});
        }
        if (rec.rank >= 0 && static_cast<size_t>(rec.rank) < ci.members.size() &&
            ci.members[static_cast<size_t>(rec.rank)] >= 0 &&
            ci.members[static_cast<size_t>(rec.rank)] != ri.rank) {
          conflicts.push_back(
              {ci.members[static_cast<size_t>(rec.rank)], ri.rank,
               "both claim rank " + std::to_string(rec.rank) + " of comm " + hex_id(rec.comm_id)});
        }
        ci.id = rec.comm_id;
        ci.nranks = std::max(ci.nranks, rec.nranks);
        ci.parent = rec.parent_id;
        ci.color = rec.color;
        ci.ordinal = rec.ordinal;
        ci.origin = rec.origin;
        if (rec.rank >= 0 && rec.rank < 1 << 24) {
          if (ci.members.size() <= static_cast<size_t>(rec.rank)) {
            ci.members.resize(static_cast<size_t>(rec.rank) + 1, -1);
          }
          ci.members[static_cast<size_t>(rec.rank)] = ri.rank;
        }
      }
    }
    if (auto e = reader.events(); e.ok()) {
      for (const auto& ev : e.value()) {
        if (!trace::plausible_time(ev.t_ns)) {
          fail(Status::error(entry.path + ": event time " + std::to_string(ev.t_ns) +
                             " is out of range (corrupt /events)"));
          break;
        }
        if (!notable(ev)) continue;
        if (static_cast<EventKind>(ev.kind) == EventKind::kShutdown) ri.shutdown = true;
        if (static_cast<EventKind>(ev.kind) == EventKind::kSignal) ri.last_signal = ev.value;
        if (ri.events.size() < 256) ri.events.push_back(ev);
      }
    } else {
      fail(e.status());
    }
    // /stats, /pending, /gpu_samples, /progress: with a cache, only what is new.
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
      ri.last_flush_local = tables->last_flush_local;
      ri.run_delay = tables->run_delay;
      ri.ops_dropped = tables->ops_dropped;
      ri.probe_cpu_ns = tables->last_flush.probe_cpu_ns;
      ri.pending = tables->pending;
      ri.gpu = tables->gpu.summary();
      ri.gpu.series = std::move(whole.series);
      ri.progress = tables->progress;
    }
    if (Status s = read_links(reader, set.world_size, ri.links); !s.ok()) fail(s);
    std::unordered_map<uint64_t, int32_t> me_in;
    for (const auto& rec : comm_rows.value()) me_in[rec.comm_id] = rec.rank;
    WindowFirsts& wf = firsts[static_cast<size_t>(entry.rank)];
    if (window && options.row_cache != nullptr) {
      // The window's rows are held between calls: only rows appended since are read.
      if (Status s = options.row_cache->update(entry.path, reader, ri.first_row, ri.op_count);
          !s.ok()) {
        fail(s);
      } else {
        note_window_rows(options.row_cache->rows(entry.path), 0, options.clock_sample_window,
                         window, me_in, ri.clock_samples, wf);
      }
    } else if (Status s = read_window_start(reader, ri, options.clock_sample_window, window, me_in,
                                            ri.clock_samples, wf);
               !s.ok()) {
      fail(s);
    }
    if (window) {
      for (const auto& op : ri.pending) {
        auto me = me_in.find(op.comm_id);
        wf.note(op, me == me_in.end() ? -1 : me->second);
      }
    }
  }
  progress.finish();
  for (const auto& c : conflicts) {
    const std::string why = "ranks " + std::to_string(c.a) + " and " + std::to_string(c.b) + " " +
                            c.what + " (corrupt comm table)";
    for (int64_t r : {c.a, c.b}) {
      RankInfo& ri = set.ranks[static_cast<size_t>(r)];
      if (!ri.has_file || !ri.read_error.empty()) continue;
      ri.read_error = ri.path + ": " + why;
      set.warnings.push_back(ri.read_error + " (rank " + std::to_string(r) +
                             ": not used, analyzed as missing)");
    }
  }
  if (base == std::numeric_limits<int64_t>::max()) {
    return Status::error(dir + ": no trace file could be opened");
  }
  set.base_realtime_ns = base;
  for (auto& ri : set.ranks) {
    if (ri.has_file) ri.shift_ns -= base;
  }

  for (auto& [id, ci] : comms) {
    ci.index = static_cast<int>(set.comms.size());
    if (static_cast<int>(ci.members.size()) < ci.nranks)
      ci.members.resize(static_cast<size_t>(ci.nranks), -1);
    set.comm_index[id] = ci.index;
    set.comms.push_back(ci);
  }
  count_comm_members(set);
  // Ranks with no file: place them in comms where their comm rank equals the
  // global rank of a world-sized communicator (what every launcher does).
  for (auto& ci : set.comms) {
    if (ci.nranks == set.world_size && ci.parent == 0) {
      for (size_t i = 0; i < ci.members.size(); ++i) {
        // Only for ranks without a file: one with a file says where it is.
        if (ci.members[i] < 0 && i < set.ranks.size() && !set.ranks[i].has_file)
          ci.members[i] = static_cast<int64_t>(i);
      }
      ci.label = "world";
    }
  }
  for (auto& ci : set.comms) {
    if (!ci.label.empty()) continue;
    char buf[96];
    if (ci.color >= 0) {
      std::snprintf(buf, sizeof buf, "split %s (%d ranks, color %d)", ci.id_hex().c_str(),
                    ci.nranks, ci.color);
    } else {
      std::snprintf(buf, sizeof buf, "comm %s (%d ranks)", ci.id_hex().c_str(), ci.nranks);
    }
    ci.label = buf;
  }
  build_op_window(set, options.window_ops, firsts, options.window_cache, options.reader_cache);
  return set;
}

}  // namespace ringside::analysis
