#include "ringside/trace_reader.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>
#include <utility>

#include "hdf5_util.h"
#include "meta_attributes.h"
#include "ringside/safe_text.h"
#include "ringside/trace_validate.h"
#include "trace_types.h"

namespace ringside::trace {
namespace {

constexpr unsigned kMetadataReadAttempts = 8;

// One dataset of an open file, checked against the schema's field table.
struct OpenDataset {
  const DatasetSpec* spec = nullptr;
  h5::Handle dataset;
  h5::Handle memory_type;
  // Rows at the last refresh (or when opened), no more than `announced`; for a synced
  // reader of a file without row counts in /stats (TraceReader::sync), `stale` says
  // that the writer has flushed since.
  mutable uint64_t rows = 0;
  mutable bool stale = false;
  // How many rows the newest complete flush the reader has seen announces (files
  // whose /stats rows count each table's rows); unbounded otherwise.
  mutable uint64_t announced = kUnbounded;
  static constexpr uint64_t kUnbounded = UINT64_MAX;
};

// A field added after its dataset was first written: older files lack it, and
// the reader's zeroed rows keep 0 there (HDF5 converts compound members by name).
bool later_field(const std::string& dataset, const std::string& field) {
  const std::string key = dataset + "." + field;
  for (const char* f : kLaterFields)
    if (key == f) return true;
  return false;
}

Status open_dataset(hid_t file, const char* name, const std::string& path, OpenDataset& out) {
  const DatasetSpec& spec = dataset_spec(name);
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) {
    return Status::error(path + ": dataset '" + name +
                         "' is missing; the file is truncated, corrupt or not a ringside trace");
  }
  h5::Handle dataset(H5Dopen2(file, name, H5P_DEFAULT));
  if (!dataset.valid())
    return Status::error(h5::failure(std::string("opening dataset ") + name, path));
  h5::Handle file_type(H5Dget_type(dataset.get()));
  if (!file_type.valid() || H5Tget_class(file_type.get()) != H5T_COMPOUND) {
    return Status::error(path + ": dataset '" + name + "' is not a table of records");
  }
  for (const FieldInfo& field : spec.fields) {
    if (H5Tget_member_index(file_type.get(), field.name.c_str()) < 0 &&
        !later_field(name, field.name)) {
      return Status::error(path + ": dataset '" + name + "' has no field '" + field.name +
                           "'; the file does not follow trace schema v" +
                           std::to_string(kSchemaVersion));
    }
  }
  h5::Handle space(H5Dget_space(dataset.get()));
  if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 1) {
    return Status::error(path + ": dataset '" + name + "' is not one-dimensional");
  }
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  out.spec = &spec;
  out.rows = dims[0];
  out.dataset = std::move(dataset);
  out.memory_type = h5::Handle(spec.make_memory_type());
  return {};
}

// A live writer may have appended since the dataset was opened or last refreshed:
// refreshed under SWMR (which drops its chunk cache and reloads its header).
uint64_t refreshed_extent(const OpenDataset& ds) {
  H5Drefresh(ds.dataset.get());
  h5::Handle space(H5Dget_space(ds.dataset.get()));
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  ds.rows = std::min<uint64_t>(dims[0], ds.announced);
  ds.stale = false;
  return ds.rows;
}

// The rows a read may use.  Where a flush announced them: those, refreshed only
// when the dataset last showed fewer.  Otherwise refreshed first, unless the reader
// is synced and the dataset was not marked stale (TraceReader::sync).
uint64_t extent(const OpenDataset& ds, bool synced) {
  if (ds.announced != OpenDataset::kUnbounded)
    return ds.rows < ds.announced ? refreshed_extent(ds) : ds.rows;
  return synced && !ds.stale ? ds.rows : refreshed_extent(ds);
}

// Conversion buffers for every read of this thread (hdf5_util.h); reads of more
// rows than they hold are converted in strips.
constexpr size_t kTransferBytes = 256 * 1024;

// A table of a reader opened for its op rows alone (TraceReader::open_ops).
Status not_opened(const std::string& path) {
  return Status::error(path + ": opened for its op rows alone; its other tables are not read");
}

Status read_rows(const OpenDataset& ds, uint64_t first, size_t count, void* out,
                 const std::string& path) {
  if (ds.spec == nullptr) return not_opened(path);
  if (count == 0) return {};
  thread_local const h5::TransferBuffers transfer(kTransferBytes);
  h5::Handle file_space(H5Dget_space(ds.dataset.get()));
  hsize_t start[1] = {first};
  hsize_t n[1] = {count};
  h5::Handle mem_space(H5Screate_simple(1, n, nullptr));
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, n, nullptr) < 0 ||
      H5Dread(ds.dataset.get(), ds.memory_type.get(), mem_space.get(), file_space.get(),
              transfer.get(), out) < 0) {
    return Status::error(path + ": reading records " + std::to_string(first) + ".." +
                         std::to_string(first + count) + " of dataset '" + ds.spec->name +
                         "' failed (corrupt or truncated data): " + h5::last_error());
  }
  return {};
}

// Rows [first, end) of a table; none if it holds no more than `first`.
template <typename Record>
Result<std::vector<Record>> read_all(const OpenDataset& ds, bool synced, const std::string& path,
                                     uint64_t first = 0) {
  if (ds.spec == nullptr) return not_opened(path);
  h5::QuietErrors quiet;
  const uint64_t end = extent(ds, synced);
  std::vector<Record> rows(end > first ? end - first : 0);
  if (Status s = read_rows(ds, first, rows.size(), rows.data(), path); !s.ok()) return s;
  return rows;
}

}  // namespace

struct TraceReader::Impl {
  std::string path;
  TraceMeta meta;
  h5::Handle file;
  OpenDataset ops, pending, samples, events, comms, stats;
  OpenDataset links;     // optional: files written before it existed have none
  OpenDataset progress;  // likewise
  // Which file it reads: stamped when it was opened (dev, inode and creation time stay
  // those of the open file, whatever its path names since).
  FileStamp stamp;
  // /stats rows say how many rows each table holds (ops_rows and on).
  bool announces = false;
  // The /stats rows the last look for the newest complete flush read, from row
  // stats_read_first on: stats() serves rows up to that flush's from them.
  std::vector<StatsRecord> stats_read;
  uint64_t stats_read_first = 0;
  // sync() was called: reads refresh only what it found stale.
  mutable bool synced = false;
  bool ops_only = false;  // TraceReader::open_ops
};

namespace {

// The tables whose rows a /stats row counts, in its field order.
std::array<const OpenDataset*, 6> counted_tables(const TraceReader::Impl& m) {
  return {&m.ops, &m.samples, &m.events, &m.comms, &m.links, &m.progress};
}

// Moves a reader of a file whose /stats rows count each table's rows on to the newest
// complete flush: from then on every table reads up to that flush's counts, /stats up
// to its row.  Rows beyond belong to a flush still being written, or to one a kill cut
// short: they may be fill values, or ops on a communicator /comms does not list yet.
// A file without a complete flush reads as empty.  On a /stats it cannot read, it lifts
// the bounds (reads then report what is wrong).  `refresh`: refresh /stats first (not
// when it was opened just now).
void see_newest_flush(TraceReader::Impl& m, bool refresh) {
  h5::QuietErrors quiet;
  OpenDataset& st = m.stats;
  m.stats_read.clear();
  const uint64_t seen = st.announced == OpenDataset::kUnbounded ? 0 : st.announced;
  st.announced = OpenDataset::kUnbounded;
  const uint64_t total = refresh ? refreshed_extent(st) : st.rows;
  std::optional<StatsRecord> newest;
  uint64_t newest_rows = seen;
  // The newest complete row is the last one written, or close to it (a flush writes one):
  // the last few rows first, then the rest since the last call.
  constexpr uint64_t kTail = 8;
  for (uint64_t end = total; end > seen && !newest;) {
    const uint64_t first = end == total && end - seen > kTail ? end - kTail : seen;
    std::vector<StatsRecord> rows(end - first);
    if (!read_rows(st, first, rows.size(), rows.data(), m.path).ok()) {
      for (const OpenDataset* ds : counted_tables(m)) ds->announced = OpenDataset::kUnbounded;
      return;
    }
    for (uint64_t i = rows.size(); i-- > 0 && !newest;) {
      if (rows[i].flush_index == 0) continue;
      newest = rows[i];
      newest_rows = first + i + 1;
    }
    if (newest) {
      m.stats_read = std::move(rows);
      m.stats_read_first = first;
    }
    end = first;
  }
  st.announced = newest_rows;
  st.rows = std::min(st.rows, newest_rows);
  if (!newest) {
    if (seen == 0) {
      for (const OpenDataset* ds : counted_tables(m)) ds->announced = ds->rows = 0;
    }
    return;
  }
  const uint64_t counts[] = {newest->ops_rows,   newest->samples_rows, newest->events_rows,
                             newest->comms_rows, newest->links_rows,   newest->progress_rows};
  const auto tables = counted_tables(m);
  for (size_t i = 0; i < tables.size(); ++i) {
    tables[i]->announced = counts[i];
    tables[i]->rows = std::min(tables[i]->rows, counts[i]);
  }
  // /pending is written over in place: its rows are read afresh after any flush.
  m.pending.stale = true;
}

}  // namespace

TraceReader::TraceReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceReader::~TraceReader() = default;

// Opens `path`'s HDF5 file into `impl` (SWMR read when it allows it).  Its callers keep
// HDF5 quiet (h5::QuietErrors) for the whole open.
static Status open_file(const std::string& path, TraceReader::Impl* impl) {
  // One stat: the checks below, and the stamp that names the file from now on.
  auto stamp = file_stamp(path);
  if (!stamp.ok()) return Status::error(path + ": no such file");
  const FileStamp& st = stamp.value();
  if (!st.regular) return Status::error(path + ": not a regular file");
  if (st.size == 0) return Status::error(path + ": empty file (0 bytes)");
  impl->stamp = st;

  if (H5Fis_hdf5(path.c_str()) <= 0) {
    return Status::error(path +
                         ": not an HDF5 file (no valid HDF5 signature; truncated or corrupt)");
  }
  impl->path = path;
  // SWMR read opens files whose writer is still running or was killed,
  // without h5clear.  Files from other tools may not allow it: retry plainly.
  h5::Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  // Under SWMR read HDF5 retries metadata whose checksum fails (the writer may
  // be mid-update), by default 100 times with growing sleeps: a corrupt file
  // would then take minutes to reject.  A few attempts cover a live writer.
  H5Pset_metadata_read_attempts(fapl.get(), kMetadataReadAttempts);
  // Close every object with the file, even after a failed read.
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  // No cache of decompressed chunks (HDF5's default: 1 MiB per dataset).  Rows are read in
  // whole ranges, each chunk once (a batch boundary inside a chunk decompresses it twice),
  // and a refresh empties the cache: it saved nothing, and in a watch that keeps 1024
  // files open it held 0.75 MiB per file of chunks no read would ask for again.
  H5Pset_cache(fapl.get(), 0, 521, 0, 0.75);
  impl->file = h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get()));
  if (!impl->file.valid()) {
    std::string swmr_error = h5::last_error();
    impl->file = h5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (!impl->file.valid()) {
      std::string detail = swmr_error;
      if (detail.find("truncated") != std::string::npos) {
        detail = "the file is truncated (" + std::to_string(st.size) + " bytes): " + detail;
      }
      return Status::error(path + ": cannot open as HDF5: " + detail);
    }
  }
  return {};
}

Result<std::unique_ptr<TraceReader>> TraceReader::open(const std::string& path) {
  // HDF5 reports what fails here once, in the status, not on stderr as well.
  h5::QuietErrors quiet;
  auto impl = std::make_unique<Impl>();
  if (Status s = open_file(path, impl.get()); !s.ok()) return s;
  if (Status s = read_meta_attributes(impl->file.get(), impl->meta, path); !s.ok()) return s;
  if (Status s = validate_meta(impl->meta, path); !s.ok()) return s;

  std::pair<OpenDataset*, const char*> sets[] = {
      {&impl->ops, kOpsDataset},         {&impl->pending, kPendingDataset},
      {&impl->samples, kSamplesDataset}, {&impl->events, kEventsDataset},
      {&impl->comms, kCommsDataset},     {&impl->stats, kStatsDataset}};
  for (auto& [ds, name] : sets) {
    if (Status s = open_dataset(impl->file.get(), name, path, *ds); !s.ok()) return s;
  }
  std::pair<OpenDataset*, const char*> optional_sets[] = {{&impl->links, kLinksDataset},
                                                          {&impl->progress, kProgressDataset}};
  for (auto& [ds, name] : optional_sets) {
    if (H5Lexists(impl->file.get(), name, H5P_DEFAULT) <= 0) continue;
    if (Status s = open_dataset(impl->file.get(), name, path, *ds); !s.ok()) return s;
  }
  h5::Handle stats_type(H5Dget_type(impl->stats.dataset.get()));
  impl->announces = H5Tget_member_index(stats_type.get(), "ops_rows") >= 0;
  if (impl->announces) see_newest_flush(*impl, false);
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

Result<std::unique_ptr<TraceReader>> TraceReader::open_ops(const std::string& path) {
  h5::QuietErrors quiet;
  auto impl = std::make_unique<Impl>();
  if (Status s = open_file(path, impl.get()); !s.ok()) return s;
  if (Status s = open_dataset(impl->file.get(), kOpsDataset, path, impl->ops); !s.ok()) return s;
  impl->ops_only = true;
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

void TraceReader::sync() const {
  Impl& m = *impl_;
  // Opened just now, or synced before: what it has seen so far is current.
  if (!m.synced) {
    m.synced = true;
    return;
  }
  if (m.announces) {
    see_newest_flush(m, true);
    return;
  }
  // A file whose /stats does not say which tables grew: every table is refreshed when
  // next read.
  for (const OpenDataset* ds : counted_tables(m)) ds->stale = true;
  m.pending.stale = true;
}

const TraceMeta& TraceReader::meta() const {
  return impl_->meta;
}
const std::string& TraceReader::path() const {
  return impl_->path;
}

uint64_t TraceReader::op_count() const {
  h5::QuietErrors quiet;
  return extent(impl_->ops, impl_->synced);
}

Result<size_t> TraceReader::read_ops(uint64_t first, std::span<OpRecord> out) const {
  h5::QuietErrors quiet;
  // Reads inside the rows seen at the last refresh need none (a refresh drops the
  // chunk cache).
  if (first + out.size() > impl_->ops.rows || (impl_->synced && impl_->ops.stale))
    extent(impl_->ops, impl_->synced);
  const uint64_t total = impl_->ops.rows;
  if (first >= total) return size_t{0};
  size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), total - first));
  if (Status s = read_rows(impl_->ops, first, n, out.data(), impl_->path); !s.ok()) return s;
  return n;
}

Status TraceReader::for_each_op_batch(size_t batch,
                                      const std::function<bool(std::span<const OpRecord>)>& fn,
                                      uint64_t from) const {
  const uint64_t total = op_count();
  if (from >= total) return {};
  // No larger than what there is to read: zeroing a buffer costs as much as filling it.
  batch = static_cast<size_t>(std::clamp<uint64_t>(batch, 1, total - from));
  std::vector<OpRecord> buf(batch);
  for (uint64_t first = from; first < total; first += batch) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(batch, total - first));
    auto got = read_ops(first, std::span<OpRecord>(buf.data(), n));
    if (!got.ok()) return got.status();
    if (!fn(std::span<const OpRecord>(buf.data(), got.value()))) break;
  }
  return {};
}

Result<std::vector<SampleRecord>> TraceReader::samples(uint64_t first) const {
  return read_all<SampleRecord>(impl_->samples, impl_->synced, impl_->path, first);
}
Result<std::vector<EventRecord>> TraceReader::events() const {
  auto rows = read_all<EventRecord>(impl_->events, impl_->synced, impl_->path);
  if (rows.ok()) {
    // Guarantee termination whatever the file holds, and text that is safe to show.
    for (EventRecord& e : rows.value()) {
      e.text[kTextLen - 1] = '\0';
      const std::string shown = printable(e.text);
      std::snprintf(e.text, kTextLen, "%s", shown.c_str());
    }
  }
  return rows;
}
Result<std::vector<CommRecord>> TraceReader::comms(uint64_t first) const {
  return read_all<CommRecord>(impl_->comms, impl_->synced, impl_->path, first);
}

Result<std::vector<LinkRecord>> TraceReader::links(uint64_t first) const {
  if (impl_->ops_only) return not_opened(impl_->path);
  if (!impl_->links.dataset.valid()) return std::vector<LinkRecord>{};
  return read_all<LinkRecord>(impl_->links, impl_->synced, impl_->path, first);
}
Result<std::vector<StatsRecord>> TraceReader::stats(uint64_t first) const {
  const Impl& m = *impl_;
  // Rows the look for the newest flush read already: a watch poll reads each new row once.
  if (m.announces && !m.stats_read.empty() && first >= m.stats_read_first &&
      m.stats.announced <= m.stats_read_first + m.stats_read.size()) {
    if (first >= m.stats.announced) return std::vector<StatsRecord>{};
    const auto from = static_cast<size_t>(first - m.stats_read_first);
    const auto to = static_cast<size_t>(m.stats.announced - m.stats_read_first);
    return std::vector<StatsRecord>(m.stats_read.begin() + static_cast<long>(from),
                                    m.stats_read.begin() + static_cast<long>(to));
  }
  return read_all<StatsRecord>(m.stats, m.synced, m.path, first);
}

const FileStamp& TraceReader::stamp() const {
  return impl_->stamp;
}

Result<std::vector<ProgressRecord>> TraceReader::progress(uint64_t first) const {
  if (impl_->ops_only) return not_opened(impl_->path);
  if (!impl_->progress.dataset.valid()) return std::vector<ProgressRecord>{};
  return read_all<ProgressRecord>(impl_->progress, impl_->synced, impl_->path, first);
}

bool TraceReader::has_progress() const {
  return impl_->progress.dataset.valid();
}

Result<std::vector<OpRecord>> TraceReader::last_pending() const {
  h5::QuietErrors quiet;
  // The last written `stats` row names the last complete flush and how many ops it left
  // outstanding.  Rows of a later flush may be visible without their stats row
  // (the writer was killed between the two), some of them never written (fill
  // value, flush_index 0): they are skipped, not trusted.
  auto st = stats();
  if (!st.ok()) return st.status();
  const auto& rows = st.value();
  auto last = std::find_if(rows.rbegin(), rows.rend(),
                           [](const StatsRecord& r) { return r.flush_index != 0; });
  if (last == rows.rend()) return std::vector<OpRecord>{};
  return pending_of(*last);
}

Result<std::vector<OpRecord>> TraceReader::pending_of(const StatsRecord& last,
                                                      int superseded_tries) const {
  h5::QuietErrors quiet;
  std::vector<OpRecord> out;
  if (last.flush_index == 0 || last.pending_ops == 0) return out;
  const uint64_t want = last.flush_index;
  std::vector<PendingRecord> buf;
  if (last.pending_start != 0) {
    // The stats row says where its snapshot is (the writer reuses /pending's rows).
    const uint64_t first = last.pending_start - 1;
    const uint64_t n = last.pending_ops;
    const uint64_t rows = extent(impl_->pending, impl_->synced);
    if (n > rows || first > rows - n) {
      return Status::error(impl_->path + ": flush " + std::to_string(want) + "'s " +
                           std::to_string(n) + " pending ops at row " + std::to_string(first) +
                           " lie beyond /pending's " + std::to_string(rows) + " rows");
    }
    buf.resize(n);
    if (Status s = read_rows(impl_->pending, first, n, buf.data(), impl_->path); !s.ok()) return s;
    for (const PendingRecord& row : buf) {
      if (row.flush_index > want && superseded_tries > 0) {
        // Written over by a later flush since the caller read `last` (a live
        // file): the snapshot of the newest complete flush answers instead (a
        // synced reader's /stats is refreshed for it).
        if (impl_->announces) {
          see_newest_flush(*impl_, true);
        } else {
          impl_->stats.stale = true;
        }
        auto st = stats();
        if (!st.ok()) return st.status();
        auto newest = std::find_if(st.value().rbegin(), st.value().rend(),
                                   [](const StatsRecord& r) { return r.flush_index != 0; });
        if (newest != st.value().rend() && newest->flush_index > want)
          return pending_of(*newest, superseded_tries - 1);
      }
      if (row.flush_index != want) {
        return Status::error(impl_->path + ": /pending row of flush " +
                             std::to_string(row.flush_index) + " where flush " +
                             std::to_string(want) + "'s snapshot should be");
      }
      out.push_back(row.op);
    }
    return out;
  }
  // Files without `pending_start` append snapshots in flush order: read
  // backwards in windows until an earlier flush shows up.
  constexpr uint64_t kWindow = 1024;
  uint64_t end = extent(impl_->pending, impl_->synced);
  bool done = false;
  while (end > 0 && !done) {
    const uint64_t first = end > kWindow ? end - kWindow : 0;
    buf.resize(end - first);
    if (Status s = read_rows(impl_->pending, first, buf.size(), buf.data(), impl_->path); !s.ok()) {
      return s;
    }
    for (auto it = buf.rbegin(); it != buf.rend(); ++it) {
      if (it->flush_index == want) {
        out.push_back(it->op);
      } else if (!out.empty() || (it->flush_index != 0 && it->flush_index < want)) {
        done = true;  // past the snapshot, or an earlier flush: it has no rows
        break;
      }
    }
    end = first;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace ringside::trace
