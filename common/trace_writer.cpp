#include "ringside/trace_writer.h"

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

// One appendable dataset with an in-memory buffer of at most one chunk.
class AppendBuffer {
 public:
  AppendBuffer(const DatasetSpec& spec, size_t chunk_records)
      : spec_(&spec), chunk_records_(chunk_records), memory_type_(spec.make_memory_type()) {
    buffer_.reserve(chunk_records_ * spec.record_size);
  }

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
    return {};
  }

  // Buffers records; writes every full chunk.
  Status append(const void* records, size_t count, const std::string& path) {
    const auto* bytes = static_cast<const std::byte*>(records);
    const size_t size = spec_->record_size;
    while (count > 0) {
      size_t room = chunk_records_ - buffered();
      size_t take = count < room ? count : room;
      buffer_.insert(buffer_.end(), bytes, bytes + take * size);
      bytes += take * size;
      count -= take;
      if (buffered() == chunk_records_) {
        if (Status s = write_out(path); !s.ok()) return s;
      }
    }
    return {};
  }

  // Writes what is buffered (a partial chunk) and flushes the dataset, unless
  // nothing was written since the last flush.
  Status flush(const std::string& path) {
    if (Status s = write_out(path); !s.ok()) return s;
    if (!dirty_) return {};
    dirty_ = false;
    if (H5Dflush(dataset_.get()) < 0) {
      return Status::error(h5::failure(std::string("flushing dataset ") + spec_->name, path));
    }
    return {};
  }

  uint64_t written() const { return written_; }
  void release() { dataset_.reset(); }

 private:
  size_t buffered() const { return buffer_.size() / spec_->record_size; }

  Status write_out(const std::string& path) {
    const size_t n = buffered();
    if (n == 0) return {};
    hsize_t new_size[1] = {written_ + n};
    if (H5Dset_extent(dataset_.get(), new_size) < 0) {
      return Status::error(h5::failure(std::string("extending dataset ") + spec_->name, path));
    }
    h5::Handle file_space(H5Dget_space(dataset_.get()));
    hsize_t start[1] = {written_};
    hsize_t count[1] = {n};
    h5::Handle mem_space(H5Screate_simple(1, count, nullptr));
    if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dwrite(dataset_.get(), memory_type_.get(), mem_space.get(), file_space.get(), H5P_DEFAULT,
                 buffer_.data()) < 0) {
      return Status::error(h5::failure(std::string("writing dataset ") + spec_->name, path));
    }
    written_ += n;
    buffer_.clear();
    dirty_ = true;
    return {};
  }

  const DatasetSpec* spec_;
  size_t chunk_records_;
  h5::Handle memory_type_;
  h5::Handle dataset_;
  std::vector<std::byte> buffer_;
  uint64_t written_ = 0;
  bool dirty_ = false;  // written since the last flush
};

}  // namespace

struct TraceWriter::Impl {
  std::string path;
  WriterOptions options;
  h5::Handle file;
  AppendBuffer ops{dataset_spec(kOpsDataset), 1};
  AppendBuffer pending{dataset_spec(kPendingDataset), 1};
  AppendBuffer samples{dataset_spec(kSamplesDataset), 1};
  AppendBuffer events{dataset_spec(kEventsDataset), 1};
  AppendBuffer comms{dataset_spec(kCommsDataset), 1};
  AppendBuffer stats{dataset_spec(kStatsDataset), 1};
  AppendBuffer links{dataset_spec(kLinksDataset), 1};
  AppendBuffer progress{dataset_spec(kProgressDataset), 1};
  CommProgress comm_progress;
  std::vector<ProgressRecord> progress_rows;
  uint64_t flushes = 0;
  int64_t clock_monotonic_ns = 0;  // the file's clock reference
  int descriptor = -1;             // HDF5's descriptor of the file
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
    return o.chunk_records < 256 ? o.chunk_records : 256;
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

Result<bool> TraceWriter::initialize_library() {
  // H5dont_atexit succeeds only before the library's first initialisation.
  const bool owns_exit = H5dont_atexit() >= 0;
  if (H5open() < 0) return Status::error("initialising the HDF5 library failed");
  return owns_exit;
}

void TraceWriter::close_library() {
  H5close();
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path,
                                                         const TraceMeta& meta,
                                                         const WriterOptions& options) {
  if (options.chunk_records == 0) {
    return Status::error("trace writer for " + path + ": chunk_records must be at least 1");
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

  for (AppendBuffer* buf : {&impl->ops, &impl->pending, &impl->samples, &impl->events, &impl->comms,
                            &impl->stats, &impl->links, &impl->progress}) {
    if (Status s = buf->create(impl->file.get(), path, options); !s.ok()) return s;
  }
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
  return impl_->guard(impl_->ops.append(ops.data(), ops.size(), impl_->path));
}

Status TraceWriter::flush(std::span<const OpRecord> pending, StatsRecord stats) {
  if (impl_->closed) return closed_error(impl_->path);
  if (!impl_->broken.ok()) return impl_->broken;
  h5::QuietErrors quiet;
  Impl& w = *impl_;
  const uint64_t index = w.flushes + 1;
  for (const OpRecord& op : pending) {
    PendingRecord row{index, op};
    if (Status s = w.guard(w.pending.append(&row, 1, w.path)); !s.ok()) return s;
  }
  stats.flush_index = index;
  stats.pending_ops = pending.size();
  if (stats.t_ns == 0) stats.t_ns = monotonic_now_ns() - w.clock_monotonic_ns;
  w.progress_rows.clear();
  w.comm_progress.flush_rows(pending, stats.t_ns, index, w.progress_rows);
  if (Status s = w.guard(w.progress.append(w.progress_rows.data(), w.progress_rows.size(), w.path));
      !s.ok())
    return s;
  if (Status s = w.guard(w.stats.append(&stats, 1, w.path)); !s.ok()) return s;
  // Data before the stats row that announces it: a reader that sees flush N's
  // stats row also sees every op written before it.
  for (AppendBuffer* buf :
       {&w.ops, &w.samples, &w.events, &w.comms, &w.links, &w.progress, &w.pending, &w.stats}) {
    if (Status s = w.guard(buf->flush(w.path)); !s.ok()) return s;
  }
  if (H5Fflush(w.file.get(), H5F_SCOPE_GLOBAL) < 0) {
    return w.guard(Status::error(h5::failure("flushing file", w.path)));
  }
  w.flushes = index;
  return {};
}

Status TraceWriter::close() {
  if (!impl_ || impl_->closed) return {};
  Status result;
  if (impl_->broken.ok()) {
    h5::QuietErrors quiet;
    for (AppendBuffer* buf : {&impl_->ops, &impl_->samples, &impl_->events, &impl_->comms,
                              &impl_->links, &impl_->progress, &impl_->pending, &impl_->stats}) {
      if (Status s = buf->flush(impl_->path); !s.ok() && result.ok()) result = s;
    }
  } else {
    result = impl_->broken;
  }
  for (AppendBuffer* buf : {&impl_->ops, &impl_->samples, &impl_->events, &impl_->comms,
                            &impl_->links, &impl_->progress, &impl_->pending, &impl_->stats}) {
    buf->release();
  }
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
