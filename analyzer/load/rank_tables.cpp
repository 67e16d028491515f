#include "load/rank_tables.h"

#include <algorithm>

#include "ringside/trace_validate.h"

namespace ringside::analysis {
namespace {

// Stats rows carry trace-local times; tolerate producers that wrote raw
// CLOCK_MONOTONIC by recognising values beyond the clock reference.
int64_t stats_local(int64_t t, int64_t clock_monotonic) {
  if (clock_monotonic > 0 && t >= clock_monotonic) return t - clock_monotonic;
  return t;
}

bool unwritten(const trace::SampleRecord& s) {
  return s.t_ns == 0 && s.valid == 0 && s.device == 0 && s.sm_clock_mhz == 0;
}

Status read_stats(const trace::TraceReader& reader, RankTables& t) {
  auto rows = reader.stats(t.stats_rows);
  if (!rows.ok()) return rows.status();
  const int64_t clock_monotonic = reader.meta().clock_monotonic_ns;
  for (const trace::StatsRecord& row : rows.value()) {
    if (row.flush_index == 0) break;  // not written yet
    if (!trace::plausible_time(row.t_ns)) {
      return Status::error(reader.path() + ": /stats time " + std::to_string(row.t_ns) +
                           " is out of range (corrupt file)");
    }
    const int64_t local = stats_local(row.t_ns, clock_monotonic);
    t.last_flush_local = std::max(t.last_flush_local, local);
    if (row.host_run_delay_ns > 0) t.run_delay.emplace_back(local, row.host_run_delay_ns);
    t.ops_dropped = std::max(t.ops_dropped, row.ops_dropped);
    t.last_flush = row;
    ++t.stats_rows;
  }
  return {};
}

Status read_pending(const trace::TraceReader& reader, const trace::StatsRecord& flush,
                    RankTables& t) {
  auto p = reader.pending_of(flush);
  if (!p.ok()) return p.status();
  for (const auto& op : p.value()) {
    if (Status v = trace::validate_op(op); !v.ok())
      return Status::error(reader.path() + ": /pending " + v.message());
  }
  t.pending = std::move(p.value());
  return {};
}

Status read_samples(const trace::TraceReader& reader, RankTables& t) {
  auto rows = reader.samples(t.sample_rows);
  if (!rows.ok()) return rows.status();
  auto end = std::find_if(rows.value().begin(), rows.value().end(), unwritten);
  const auto n = static_cast<size_t>(end - rows.value().begin());
  const std::span<const trace::SampleRecord> fresh(rows.value().data(), n);
  t.gpu.add(fresh);
  if (t.with_series) t.series = gpu_series(fresh);
  t.sample_rows += n;
  return {};
}

}  // namespace

Status update_rank_tables(const trace::TraceReader& reader, RankTables& t) {
  const uint64_t flush_before = t.last_flush.flush_index;
  if (Status s = read_stats(reader, t); !s.ok()) return s;
  // The snapshot of a flush never changes: read again only for a new flush.
  if (t.last_flush.flush_index != flush_before || t.stats_rows == 0) {
    if (Status s = read_pending(reader, t.last_flush, t); !s.ok()) return s;
  }
  return read_samples(reader, t);
}

Status update_comm_rows(const trace::TraceReader& reader, int64_t world_size,
                        std::vector<trace::CommRecord>& comms) {
  auto rows = reader.comms(comms.size());
  if (!rows.ok()) return rows.status();
  for (const auto& rec : rows.value()) {
    if (Status v = trace::validate_comm(rec, world_size); !v.ok()) return v;
    comms.push_back(rec);
  }
  return {};
}

Status update_link_rows(const trace::TraceReader& reader, int64_t world_size,
                        LinkWindowSums& sums) {
  auto rows = reader.links(sums.rows());
  if (!rows.ok()) return rows.status();
  for (const trace::LinkRecord& l : rows.value()) {
    if (Status v = trace::validate_link(l, world_size); !v.ok())
      return Status::error(reader.path() + ": " + v.message());
  }
  sums.add(rows.value());
  return {};
}

RankTablesCache::Held& RankTablesCache::held(const trace::TraceReader& reader) {
  const FileIdentity id = file_identity(reader);
  Held& h = files_[reader.path()];
  if (h.id != id) {
    h = Held{};
    h.id = id;
  }
  return h;
}

Result<const RankTables*> RankTablesCache::update(const trace::TraceReader& reader) {
  Held& h = held(reader);
  if (Status s = update_rank_tables(reader, h.tables); !s.ok()) {
    files_.erase(reader.path());
    return s;
  }
  return &h.tables;
}

Result<const std::vector<trace::CommRecord>*> RankTablesCache::update_comms(
    const trace::TraceReader& reader, int64_t world_size) {
  Held& f = held(reader);
  if (f.comms_world_size != world_size) {
    f.comms.clear();
    f.comms_world_size = world_size;
  }
  if (Status s = update_comm_rows(reader, world_size, f.comms); !s.ok()) {
    files_.erase(reader.path());
    return s;
  }
  return &f.comms;
}

Result<const std::vector<trace::LinkRecord>*> RankTablesCache::update_links(
    const trace::TraceReader& reader, int64_t world_size) {
  Held& f = held(reader);
  if (f.links_world_size != world_size) {
    f.links = LinkWindowSums{};
    f.links_summed.clear();
    f.links_world_size = world_size;
  }
  const uint64_t before = f.links.rows();
  if (Status s = update_link_rows(reader, world_size, f.links); !s.ok()) {
    files_.erase(reader.path());
    return s;
  }
  if (f.links.rows() != before) f.links_summed = f.links.summed();
  return &f.links_summed;
}

}  // namespace ringside::analysis
