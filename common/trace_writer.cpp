#include "ringside/trace_writer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fresh_file.h"
#include "comm_progress.h"
#include "hdf5_util.h"
#include "meta_attributes.h"
#include "trace_types.h"

namespace ringside::trace {
namespace {

// Devices whose name starts with this are the ringside sim's stand-ins.
constexpr const char* kSimDevicePrefix = "ringside-sim";

// One chunked, compressed, extensible dataset of one record type.
class Table {
 public:
  Table(const DatasetSpec& spec, size_t chunk_records)
      : spec_(&spec),
        chunk_records_(chunk_records),
        memory_type_(spec.make_memory_type()),
        transfer_(chunk_records * spec.record_size) {}

  Status create(hid_t file, const std::string& path, const WriterOptions& options) {
    h5::Handle file_type = packed_copy(memory_type_.get());
    hsize_t dims[1] = {0};
    hsize_t max_dims[1] = {H5S_UNLIMITED};
    h5::Handle space(H5Screate_simple(1, dims, max_dims));
    h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
    hsize_t chunk[1] = {chunk_records_};
    bool ok = H5Pset_chunk(dcpl.get(), 1, chunk) >= 0 && H5Pset_shuffle(dcpl.get()) >= 0 &&
              (options.deflate_level <= 0 ||
               H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options.deflate_level)) >= 0) &&
              H5Pset_fletcher32(dcpl.get()) >= 0;
    if (!ok) return Status::error(h5::failure("setting up compression", path));
    dataset_ = h5::Handle(H5Dcreate2(file, spec_->name, file_type.get(), space.get(), H5P_DEFAULT,
                                     dcpl.get(), H5P_DEFAULT));
    if (!dataset_.valid()) {
      return Status::error(h5::failure(std::string("creating dataset ") + spec_->name, path));
    }
    // Every filter is skipped for an unfiltered chunk.
    const int filters = H5Pget_nfilters(dcpl.get());
    if (filters < 1) return Status::error(h5::failure("setting up compression", path));
    skip_filters_ = (1u << filters) - 1;
    file_record_size_ = H5Tget_size(file_type.get());
    file_type_ = std::move(file_type);
    return {};
  }

  // Grows the dataset to `rows` rows (never shrinks it).
  Status extend(uint64_t rows, const std::string& path) {
    if (rows <= extent_) return {};
    hsize_t new_size[1] = {rows};
    if (H5Dset_extent(dataset_.get(), new_size) < 0) {
      return Status::error(h5::failure(std::string("extending dataset ") + spec_->name, path));
    }
    extent_ = rows;
    return {};
  }

  // Writes `count` records at row `start` (< extent).
  Status write(uint64_t start, size_t count, const void* records, const std::string& path) {
    h5::Handle file_space(H5Dget_space(dataset_.get()));
    hsize_t first[1] = {start};
    hsize_t n[1] = {count};
    h5::Handle mem_space(H5Screate_simple(1, n, nullptr));
    if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, first, nullptr, n, nullptr) < 0 ||
        H5Dwrite(dataset_.get(), memory_type_.get(), mem_space.get(), file_space.get(),
                 transfer_.get(), records) < 0) {
      return Status::error(h5::failure(std::string("writing dataset ") + spec_->name, path));
    }
    dirty_ = true;
    return {};
  }

  // Writes the chunk that starts at row `start` (a multiple of the chunk size, below the
  // extent) from its first `count` records, the rest zero (the fill value), through no
  // filter (its filter mask says so): a chunk written at every flush while it fills.  A
  // reader then copies it instead of decompressing it whole at each read (the writer
  // rewrites it, so a reader's chunk cache never holds it), and the writer neither reads
  // it back nor compresses it again.  Unchanged in size, it is written where it was, so
  // the rows an earlier flush announced are rewritten with the same bytes: a reader that
  // reads it meanwhile, or a writer killed in the middle of the write, leaves them as
  // they were.  Nor is it checksummed, as such a read or write would make a checksum
  // fail for rows that are sound; the rows are checked when read (trace_validate.h).
  Status write_unfiltered(uint64_t start, size_t count, const void* records,
                          const std::string& path) {
    const size_t memory_size = spec_->record_size;
    const size_t bytes = chunk_records_ * file_record_size_;
    raw_.assign(std::max(bytes, count * memory_size), std::byte{0});
    background_.assign(count * std::max(memory_size, file_record_size_), std::byte{0});
    std::memcpy(raw_.data(), records, count * memory_size);
    if (count > 0 && H5Tconvert(memory_type_.get(), file_type_.get(), count, raw_.data(),
                                background_.data(), H5P_DEFAULT) < 0) {
      return Status::error(h5::failure(std::string("packing records of ") + spec_->name, path));
    }
    // Converted in place: what lies past the packed records is left of the unpacked ones.
    std::fill(raw_.begin() + static_cast<ptrdiff_t>(count * file_record_size_), raw_.end(),
              std::byte{0});
    hsize_t offset[1] = {start};
    if (H5Dwrite_chunk(dataset_.get(), H5P_DEFAULT, skip_filters_, offset, bytes, raw_.data()) <
        0) {
      return Status::error(h5::failure(std::string("writing dataset ") + spec_->name, path));
    }
    forget_chunk(start);
    dirty_ = true;
    return {};
  }

  // HDF5 (1.10 and on) remembers the last chunk it looked up, and H5Dwrite_chunk leaves it
  // remembered with the filters it had before the write: a write into it, or a read of it
  // by this process (a reader of the same file shares what the library holds of it),
  // would then undo filters that were skipped.  Looking up the chunk after it (not yet
  // written, so neither in the chunk cache, which would answer instead, nor in the file)
  // makes the library remember that one instead, and ask the file for this one next time.
  void forget_chunk(uint64_t start) {
    hsize_t after[1] = {start + chunk_records_};
    hsize_t bytes = 0;
    H5Dget_chunk_storage_size(dataset_.get(), after, &bytes);
  }

  // Makes what was written since the last flush visible, if anything was.
  Status flush(const std::string& path) {
    if (!dirty_) return {};
    dirty_ = false;
    if (H5Dflush(dataset_.get()) < 0) {
      return Status::error(h5::failure(std::string("flushing dataset ") + spec_->name, path));
    }
    return {};
  }

  uint64_t extent() const { return extent_; }
  size_t chunk_records() const { return chunk_records_; }
  size_t record_size() const { return spec_->record_size; }
  void release() { dataset_.reset(); }

 private:
  const DatasetSpec* spec_;
  size_t chunk_records_;
  h5::Handle memory_type_;
  h5::TransferBuffers transfer_;  // one chunk's worth: a write converts at most that at once
  h5::Handle file_type_;
  size_t file_record_size_ = 0;
  unsigned skip_filters_ = 0;                // filter mask of an unfiltered chunk
  std::vector<std::byte> raw_, background_;  // write_unfiltered's chunk and conversion buffer
  h5::Handle dataset_;
  uint64_t extent_ = 0;
  bool dirty_ = false;  // written since the last flush
};

// An appendable table that holds its last chunk's rows in memory until the chunk is
// full, and then writes it whole (compressed).  A flush writes the rows held so far,
// as an unfiltered chunk (Table::write_unfiltered) when that pays, and seal()
// compresses that chunk once no more rows will come.
class AppendBuffer {
 public:
  AppendBuffer(const DatasetSpec& spec, size_t chunk_records) : table_(spec, chunk_records) {
    buffer_.reserve(chunk_records * spec.record_size);
  }

  Status create(hid_t file, const std::string& path, const WriterOptions& options) {
    return table_.create(file, path, options);
  }

  // Buffers records; writes every full chunk.
  Status append(const void* records, size_t count, const std::string& path) {
    const auto* bytes = static_cast<const std::byte*>(records);
    const size_t size = table_.record_size();
    while (count > 0) {
      size_t room = table_.chunk_records() - buffered();
      size_t take = count < room ? count : room;
      buffer_.insert(buffer_.end(), bytes, bytes + take * size);
      bytes += take * size;
      count -= take;
      if (buffered() == table_.chunk_records()) {
        if (Status s = write_compressed(path); !s.ok()) return s;
        chunk_start_ += table_.chunk_records();
        buffer_.clear();
        flushed_ = 0;
        unfiltered_ = false;
        writes_ = 0;
      }
    }
    return {};
  }

  // Writes the rows appended since the last flush and flushes the dataset, unless
  // nothing was written since.  The last chunk, partly filled, is written unfiltered
  // from the first flush at which that pays (unfiltered_pays) until it is full or
  // seal() is called, else compressed.
  Status flush(const std::string& path) {
    if (buffered() > flushed_) {
      if (Status s = table_.extend(rows(), path); !s.ok()) return s;
      unfiltered_ = !sealed_ && (unfiltered_ || unfiltered_pays(rows() - rows_at_flush_));
      ++writes_;
      Status s = unfiltered_
                     ? table_.write_unfiltered(chunk_start_, buffered(), buffer_.data(), path)
                     : write_compressed(path);
      if (!s.ok()) return s;
      flushed_ = buffered();
    }
    rows_at_flush_ = rows();
    return table_.flush(path);
  }

  // No more rows but those of one last flush: the partial last chunk is written
  // compressed from now on, and rewritten so if it was flushed unfiltered.
  Status seal(const std::string& path) {
    if (sealed_) return {};
    sealed_ = true;
    if (!unfiltered_) return {};
    unfiltered_ = false;
    flushed_ = 0;
    return flush(path);
  }

  void release() { table_.release(); }
  // Rows once what is buffered is written.
  uint64_t rows() const { return chunk_start_ + buffered(); }

 private:
  size_t buffered() const { return buffer_.size() / table_.record_size(); }

  // Under SWMR the writer never reuses the space a chunk leaves when it moves, and each
  // way of flushing a partial chunk leaves some: compressed, it changes size and moves at
  // every flush that adds to it, leaving the copy before; unfiltered, it stays where it
  // is, and its whole uncompressed size is left once it is full and written compressed,
  // or sealed at close.  So it is flushed unfiltered when the chunk will take many more
  // flushes to fill: when the compressed copies it would otherwise leave (one per flush
  // at the rate of `fresh` rows a flush, each half the chunk on average, rows compressing
  // about kCompression-fold) come to more than the one unfiltered chunk; and only once
  // flushes have added to it a few times, as a table that gains rows now and then (a
  // writer that flushes once, /events) never fills it and had better leave nothing whole.
  // The probe's /ops at a few ops a second and its /stats (a row a flush): unfiltered; a
  // table that gains many rows a flush: compressed, as a reader decompresses them anyway.
  bool unfiltered_pays(uint64_t fresh) const {
    constexpr double kCompression = 8;
    constexpr int kWritesBefore = 3;
    if (writes_ < kWritesBefore) return false;
    const auto n = static_cast<double>(table_.chunk_records());
    const auto held = static_cast<double>(buffered());
    const double flushes_to_fill = (n - held) / static_cast<double>(std::max<uint64_t>(fresh, 1));
    return flushes_to_fill * (held + n) / 2 / kCompression > n;
  }

  Status write_compressed(const std::string& path) {
    if (Status s = table_.extend(rows(), path); !s.ok()) return s;
    return table_.write(chunk_start_, buffered(), buffer_.data(), path);
  }

  Table table_;
  std::vector<std::byte> buffer_;  // rows from chunk_start_ on
  uint64_t chunk_start_ = 0;       // first row of the last chunk
  size_t flushed_ = 0;             // of buffer_'s rows, those the file holds
  uint64_t rows_at_flush_ = 0;     // rows() at the last flush
  int writes_ = 0;                 // flushes that wrote the last chunk
  bool unfiltered_ = false;        // the file holds the last chunk unfiltered
  bool sealed_ = false;
};

// /pending: a reader needs only the last complete flush's snapshot, so each
// snapshot is written over one that no reader needs any more.  Two regions of
// whole chunks take turns: the one being written never shares a chunk with the
// one holding the last complete snapshot, so a kill in the middle of a flush
// leaves that snapshot intact.  The table stays as large as the largest
// snapshots instead of growing at every flush.
class SnapshotTable {
 public:
  SnapshotTable(const DatasetSpec& spec, size_t chunk_records) : table_(spec, chunk_records) {}

  Status create(hid_t file, const std::string& path, const WriterOptions& options) {
    return table_.create(file, path, options);
  }

  // Writes `count` rows of the flush in progress; `first_row` is where they start.
  Status write(const void* rows, size_t count, uint64_t& first_row, const std::string& path) {
    writing_ = -1;
    first_row = 0;
    if (count == 0) return {};
    // The region not holding the last complete snapshot (the first if neither does).
    const int r = live_ == 0 ? 1 : 0;
    Region& region = regions_[r];
    if (region.rows < count) {
      // A new region after every chunk used so far: old chunks are never
      // rewritten while the live snapshot may sit next to them.  Grown at least
      // twofold so that few regions are ever left behind.
      const uint64_t chunk = table_.chunk_records();
      const uint64_t want = std::max<uint64_t>(count, 2 * region.rows);
      region.start = reserved_end_;
      region.rows = (want + chunk - 1) / chunk * chunk;
      reserved_end_ = region.start + region.rows;
      region.used = 0;
    }
    // Rows of an older snapshot past this one's end are cleared (the fill value
    // compresses to nothing); the dataset covers the rows written, not the region.
    const size_t size = table_.record_size();
    const size_t span = std::max<size_t>(count, region.used);
    rows_.assign(span * size, std::byte{0});
    std::memcpy(rows_.data(), rows, count * size);
    if (Status s = table_.extend(region.start + span, path); !s.ok()) return s;
    if (Status s = table_.write(region.start, span, rows_.data(), path); !s.ok()) return s;
    region.used = count;
    writing_ = r;
    first_row = region.start;
    return {};
  }

  // The flush whose rows were written last is complete: its region is live.
  void committed() { live_ = writing_; }

  Status flush(const std::string& path) { return table_.flush(path); }
  void release() { table_.release(); }

 private:
  struct Region {
    uint64_t start = 0;
    uint64_t rows = 0;  // whole chunks
    size_t used = 0;    // rows of the snapshot last written here
  };
  Table table_;
  Region regions_[2];
  int live_ = -1;              // region of the last complete snapshot; -1: none (it had no rows)
  int writing_ = -1;           // region written by the flush in progress
  uint64_t reserved_end_ = 0;  // first row after every region ever reserved
  std::vector<std::byte> rows_;
};

}  // namespace

struct TraceWriter::Impl {
  std::string path;
  WriterOptions options;
  h5::Handle file;
  AppendBuffer ops{dataset_spec(kOpsDataset), 1};
  SnapshotTable pending{dataset_spec(kPendingDataset), 1};
  AppendBuffer samples{dataset_spec(kSamplesDataset), 1};
  AppendBuffer events{dataset_spec(kEventsDataset), 1};
  AppendBuffer comms{dataset_spec(kCommsDataset), 1};
  AppendBuffer stats{dataset_spec(kStatsDataset), 1};
  AppendBuffer links{dataset_spec(kLinksDataset), 1};
  AppendBuffer progress{dataset_spec(kProgressDataset), 1};
  CommProgress comm_progress;
  std::vector<ProgressRecord> progress_rows;
  uint64_t flushes = 0;
  StatsRecord last_stats{};           // the last flush's /stats row
  bool appended_since_flush = false;  // rows that no /stats row announces yet
  int64_t clock_monotonic_ns = 0;     // the file's clock reference
  int descriptor = -1;                // HDF5's descriptor of the file
  bool closed = false;
  // After a failed HDF5 call the file may be inconsistent; every later call
  // returns the first error instead of touching the file again.
  Status broken;

  Impl(std::string p, const WriterOptions& o)
      : path(std::move(p)),
        options(o),
        ops(dataset_spec(kOpsDataset), o.chunk_records),
        pending(dataset_spec(kPendingDataset), small_chunk(o)),
        samples(dataset_spec(kSamplesDataset), small_chunk(o)),
        events(dataset_spec(kEventsDataset), small_chunk(o)),
        comms(dataset_spec(kCommsDataset), small_chunk(o)),
        stats(dataset_spec(kStatsDataset), small_chunk(o)),
        links(dataset_spec(kLinksDataset), small_chunk(o)),
        progress(dataset_spec(kProgressDataset), small_chunk(o)) {}

  // Tables that grow slowly get smaller chunks so a flush does not rewrite much.
  static size_t small_chunk(const WriterOptions& o) {
    return std::min(o.chunk_records, o.table_chunk_records);
  }

  // Every append-only table, in the order they are created.
  std::array<AppendBuffer*, 7> appendable() {
    return {&ops, &samples, &events, &comms, &stats, &links, &progress};
  }

  Status guard(Status s) {
    if (!s.ok() && broken.ok()) broken = s;
    return s;
  }
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  close();
}

WriterOptions flushing_writer_options() {
  WriterOptions o;
  o.chunk_records = 512;
  o.table_chunk_records = 32;
  return o;
}

Result<bool> TraceWriter::initialize_library() {
  // H5dont_atexit succeeds only before the library's first initialisation.
  const bool owns_exit = H5dont_atexit() >= 0;
  if (H5open() < 0) return Status::error("initialising the HDF5 library failed");
  return owns_exit;
}

void TraceWriter::close_library() {
  H5close();
}

void TraceWriter::end_library() {
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) > 0) H5close();
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path,
                                                         const TraceMeta& meta,
                                                         const WriterOptions& options) {
  if (options.chunk_records == 0 || options.table_chunk_records == 0) {
    return Status::error("trace writer for " + path +
                         ": chunk_records and table_chunk_records must be at least 1");
  }
  if (options.deflate_level > 9) {
    return Status::error("trace writer for " + path + ": deflate_level must be 0..9");
  }
  h5::QuietErrors quiet;
  // Never H5Fcreate(path): HDF5 would open whatever has that name (following
  // a symlink planted there) and truncate it.  See fresh_file.h.
  auto fresh = FreshFile::create(path);
  if (!fresh.ok()) return fresh.status();
  auto impl = std::make_unique<Impl>(path, options);

  // SWMR needs the latest file format (superblock v3).
  h5::Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  impl->file =
      h5::Handle(H5Fcreate(fresh->open_name().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  if (!impl->file.valid()) return Status::error(h5::failure("creating trace file", path));
  int* hdf5_fd = nullptr;
  if (H5Fget_vfd_handle(impl->file.get(), fapl.get(), reinterpret_cast<void**>(&hdf5_fd)) < 0 ||
      hdf5_fd == nullptr) {
    return Status::error(h5::failure("finding the descriptor of trace file", path));
  }
  if (Status s = fresh->check_same_file(*hdf5_fd); !s.ok()) return s;
  impl->descriptor = *hdf5_fd;

  TraceMeta m = meta;
  impl->clock_monotonic_ns = meta.clock_monotonic_ns;
  if (m.gpu_name.rfind(kSimDevicePrefix, 0) == 0) m.simulated = 1;
  if (Status s = write_meta_attributes(impl->file.get(), m, path); !s.ok()) return s;

  for (AppendBuffer* buf : impl->appendable()) {
    if (Status s = buf->create(impl->file.get(), path, options); !s.ok()) return s;
  }
  if (Status s = impl->pending.create(impl->file.get(), path, options); !s.ok()) return s;
  if (H5Fstart_swmr_write(impl->file.get()) < 0) {
    return Status::error(h5::failure("starting SWMR write", path));
  }
  // Complete and consistent: only now does the file appear under its name.
  if (Status s = fresh->publish(); !s.ok()) return s;
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

namespace {
Status closed_error(const std::string& path) {
  return Status::error("trace writer for " + path + " is closed");
}
}  // namespace

#define RINGSIDE_WRITER_APPEND(Record, member)                                              \
  Status TraceWriter::append(std::span<const Record> records) {                             \
    if (impl_->closed) return closed_error(impl_->path);                                    \
    if (!impl_->broken.ok()) return impl_->broken;                                          \
    h5::QuietErrors quiet;                                                                  \
    impl_->appended_since_flush = impl_->appended_since_flush || !records.empty();          \
    return impl_->guard(impl_->member.append(records.data(), records.size(), impl_->path)); \
  }

RINGSIDE_WRITER_APPEND(SampleRecord, samples)
RINGSIDE_WRITER_APPEND(EventRecord, events)
RINGSIDE_WRITER_APPEND(CommRecord, comms)
RINGSIDE_WRITER_APPEND(LinkRecord, links)
#undef RINGSIDE_WRITER_APPEND

Status TraceWriter::append(std::span<const OpRecord> ops) {
  if (impl_->closed) return closed_error(impl_->path);
  if (!impl_->broken.ok()) return impl_->broken;
  h5::QuietErrors quiet;
  impl_->comm_progress.note_rows(ops);
  impl_->appended_since_flush = impl_->appended_since_flush || !ops.empty();
  return impl_->guard(impl_->ops.append(ops.data(), ops.size(), impl_->path));
}

namespace {

// Appends `stats`, announcing every table's rows, and makes it visible after the data
// it announces: a reader that sees flush N's stats row also sees every row written
// before it.
Status write_stats_row(TraceWriter::Impl& w, StatsRecord stats) {
  stats.ops_rows = w.ops.rows();
  stats.samples_rows = w.samples.rows();
  stats.events_rows = w.events.rows();
  stats.comms_rows = w.comms.rows();
  stats.links_rows = w.links.rows();
  stats.progress_rows = w.progress.rows();
  if (Status s = w.guard(w.stats.append(&stats, 1, w.path)); !s.ok()) return s;
  for (AppendBuffer* buf : {&w.ops, &w.samples, &w.events, &w.comms, &w.links, &w.progress}) {
    if (Status s = w.guard(buf->flush(w.path)); !s.ok()) return s;
  }
  if (Status s = w.guard(w.pending.flush(w.path)); !s.ok()) return s;
  if (Status s = w.guard(w.stats.flush(w.path)); !s.ok()) return s;
  if (H5Fflush(w.file.get(), H5F_SCOPE_GLOBAL) < 0) {
    return w.guard(Status::error(h5::failure("flushing file", w.path)));
  }
  w.last_stats = stats;
  w.appended_since_flush = false;
  return {};
}

}  // namespace

Status TraceWriter::flush(std::span<const OpRecord> pending, StatsRecord stats) {
  if (impl_->closed) return closed_error(impl_->path);
  if (!impl_->broken.ok()) return impl_->broken;
  h5::QuietErrors quiet;
  Impl& w = *impl_;
  const uint64_t index = w.flushes + 1;
  std::vector<PendingRecord> rows;
  rows.reserve(pending.size());
  for (const OpRecord& op : pending) rows.push_back(PendingRecord{index, op});
  uint64_t first_row = 0;
  if (Status s = w.guard(w.pending.write(rows.data(), rows.size(), first_row, w.path)); !s.ok()) {
    return s;
  }
  stats.pending_start = rows.empty() ? 0 : first_row + 1;
  stats.flush_index = index;
  stats.pending_ops = pending.size();
  if (stats.t_ns == 0) stats.t_ns = monotonic_now_ns() - w.clock_monotonic_ns;
  w.progress_rows.clear();
  w.comm_progress.flush_rows(pending, stats.t_ns, index, w.progress_rows);
  if (Status s = w.guard(w.progress.append(w.progress_rows.data(), w.progress_rows.size(), w.path));
      !s.ok())
    return s;
  if (Status s = write_stats_row(w, stats); !s.ok()) return s;
  w.pending.committed();
  w.flushes = index;
  return {};
}

Status TraceWriter::close() {
  if (!impl_ || impl_->closed) return {};
  // Every flush writes out what is buffered, so only rows appended since the last one
  // are left to write.
  Status result = impl_->broken;
  // The partial last chunks, flushed unfiltered while rows could still come, are
  // compressed now that none will but the /stats row below.
  for (AppendBuffer* buf : impl_->appendable()) {
    if (!result.ok()) break;
    h5::QuietErrors quiet;
    result = impl_->guard(buf->seal(impl_->path));
  }
  if (result.ok() && impl_->appended_since_flush) {
    // Rows appended since the last flush get a /stats row of their own, which repeats
    // that flush's (its number and /pending snapshot included) with the tables' new
    // row counts: readers that follow a live file learn of every table's rows from
    // /stats (TraceReader::sync).  A file never flushed gets its first flush.
    h5::QuietErrors quiet;
    if (impl_->flushes == 0) {
      result = flush({}, StatsRecord{});
    } else {
      StatsRecord last = impl_->last_stats;
      last.t_ns = std::max(last.t_ns, monotonic_now_ns() - impl_->clock_monotonic_ns);
      result = write_stats_row(*impl_, last);
    }
  }
  for (AppendBuffer* buf : impl_->appendable()) buf->release();
  impl_->pending.release();
  impl_->closed = true;
  impl_->file.reset();
  return result;
}

const std::string& TraceWriter::path() const {
  return impl_->path;
}
uint64_t TraceWriter::flushes() const {
  return impl_->flushes;
}
int TraceWriter::descriptor() const {
  return impl_->descriptor;
}
int64_t TraceWriter::objects_open_elsewhere() const {
  // Not datatypes: counted over all files, that includes transient ones (ours).
  constexpr unsigned kKinds = H5F_OBJ_FILE | H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_ATTR;
  const ssize_t all = H5Fget_obj_count(H5F_OBJ_ALL, kKinds);
  if (all < 0) return -1;
  if (impl_->closed || !impl_->file.valid()) return all;
  const ssize_t mine = H5Fget_obj_count(impl_->file.get(), kKinds);
  return mine < 0 ? -1 : all - mine;
}

namespace {
// Ids come from the environment; keep the file name a single safe component.
std::string name_component(std::string text) {
  for (char& c : text) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  return text;
}
}  // namespace

std::string trace_file_name(const std::string& job_id, int64_t rank, const std::string& step_id) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%06lld", static_cast<long long>(rank));
  std::string job = name_component(job_id.empty() ? std::string("nojob") : job_id);
  // Slurm's own notation for a step: <job>.<step>.
  if (!step_id.empty()) job += "." + name_component(step_id);
  return "ringside-" + job + "-r" + digits + ".h5";
}

}  // namespace ringside::trace
