// The writer thread: the only code that touches HDF5.  It drains the rings
// and queues into the TraceWriter, flushes periodically with a snapshot of
// the ops still outstanding (/pending), and closes the file at shutdown.  Any
// I/O error stops tracing with one warning; the job is never affected.
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <vector>

#include "background.h"
#include "cuda_driver.h"
#include "host_cpu.h"
#include "link_table.h"
#include "real_nccl.h"
#include "ringside/trace_writer.h"
#include "runtime.h"
#include "thread_util.h"

namespace ringside::probe {

namespace {

// Sooner when a ring passes a quarter full (op_tracker).
constexpr int64_t kDrainPeriodNs = 250'000'000;

// An op record as stored: times at the format's op-time resolution.
trace::OpRecord stored(trace::OpRecord r) {
  r.t_enter_ns = trace::at_op_time_resolution(r.t_enter_ns);
  r.t_exit_ns = trace::at_op_time_resolution(r.t_exit_ns);
  r.t_dev_start_ns = trace::at_op_time_resolution(r.t_dev_start_ns);
  r.t_dev_end_ns = trace::at_op_time_resolution(r.t_dev_end_ns);
  return r;
}

std::string uuid_text(const CUuuid& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[64];
  std::snprintf(s, sizeof s,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return s;
}

class TraceSink {
 public:
  explicit TraceSink(Runtime& rt) : rt_(rt) {}

  void run() {
    t_in_probe = true;
    cuda_driver().leave_captures_alone();
    int64_t next_flush = now_ns() + interval_ns();
    for (;;) {
      const int64_t now = now_ns();
      const bool closing = rt_.close_requested.load(std::memory_order_acquire);
      const bool asked = rt_.flush_requested.exchange(false, std::memory_order_acq_rel);
      if (!writer_ && !failed_ && rt_.first_comm_seen.load(std::memory_order_acquire)) open_file();
      {
        std::lock_guard<std::timed_mutex> in_hdf5(rt_.hdf5_gate);
        if (writer_) drain();
        if (writer_ && (now >= next_flush || asked || closing)) {
          flush();
          next_flush = now_ns() + interval_ns();
        }
      }
      if (asked || closing) rt_.flushes_done.fetch_add(1, std::memory_order_acq_rel);
      if (closing || failed_) break;
      const int64_t until_flush = next_flush - now_ns();
      rt_.writer_wake.wait(until_flush < kDrainPeriodNs ? until_flush : kDrainPeriodNs);
    }
    if (writer_) {
      std::lock_guard<std::timed_mutex> in_hdf5(rt_.hdf5_gate);
      const Status s = writer_->close();
      if (!s.ok()) fail("closing the trace", s);
    }
    rt_.writer_finished.store(true, std::memory_order_release);
  }

 private:
  int64_t interval_ns() const { return static_cast<int64_t>(rt_.config.flush_interval_s * 1e9); }

  void fail(const char* what, const Status& s) {
    failed_ = true;
    log_warning("%s failed: %s; the job continues untraced", what, s.message().c_str());
    disable_tracing();
    // Leaked on purpose: closing a broken file would only report the same error again.
    writer_.release();
  }

  void describe_gpu(trace::TraceMeta& m, int ordinal) {
    m.gpu_device = ordinal;
    const CudaDriver& cu = cuda_driver();
    CUdevice dev = 0;
    if (!cu.loaded || ordinal < 0 || cu.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) return;
    char buf[256] = {};
    if (cu.cuDeviceGetName && cu.cuDeviceGetName(buf, sizeof buf - 1, dev) == CUDA_SUCCESS)
      m.gpu_name = buf;
    if (cu.cuDeviceGetPCIBusId &&
        cu.cuDeviceGetPCIBusId(buf, sizeof buf - 1, dev) == CUDA_SUCCESS) {
      m.gpu_pci_bus_id = buf;
    }
    CUuuid u{};
    if (cu.cuDeviceGetUuid && cu.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS)
      m.gpu_uuid = uuid_text(u);
    int v = 0;
    if (cu.cuDriverGetVersion && cu.cuDriverGetVersion(&v) == CUDA_SUCCESS)
      m.cuda_driver_version = v;
  }

  void open_file() {
    trace::TraceMeta m = rt_.meta;
    if (m.rank < 0) {  // no launcher variables: the first communicator says who we are
      m.rank = rt_.first_comm_rank;
      m.world_size = rt_.first_comm_size;
    }
    describe_gpu(m, rt_.first_comm_device);
    int version = 0;
    if (real_nccl().GetVersion && real_nccl().GetVersion(&version) == ncclSuccess)
      m.nccl_version = version;
    m.simulated = 0;

    const std::filesystem::path dir(rt_.config.output_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      fail("creating the trace directory",
           Status::error("'" + dir.string() + "': " + ec.message() +
                         " (set RINGSIDE_OUTPUT or `ringside run -o` to a writable directory)"));
      return;
    }
    const std::string path = (dir / trace::trace_file_name(m.job_id, m.rank, m.step_id)).string();
    std::lock_guard<std::timed_mutex> in_hdf5(rt_.hdf5_gate);
    auto created = trace::TraceWriter::create(path, m, trace::flushing_writer_options());
    if (!created.ok()) {
      fail("creating the trace file", created.status());
      return;
    }
    writer_ = std::move(created.value());
    remember_trace_file(*writer_);
    if (rt_.config.dump_config) log_info("tracing to %s", path.c_str());
  }

  template <typename T>
  bool drain_queue(BoundedQueue<T>& q, std::vector<T>& buf) {
    buf.clear();
    T item;
    while (q.pop(item)) buf.push_back(item);
    if (buf.empty()) return true;
    const Status s = writer_->append(std::span<const T>(buf));
    if (!s.ok()) fail("writing the trace", s);
    return s.ok();
  }

  void drain() {
    if (!drain_queue(rt_.comms, comm_buf_) || !drain_queue(rt_.events, event_buf_) ||
        !drain_queue(rt_.samples, sample_buf_)) {
      return;
    }
    op_buf_.clear();
    for (ThreadState* ts = rt_.threads.load(std::memory_order_acquire); ts != nullptr;
         ts = ts->next) {
      const uint64_t head = ts->ring.head();
      for (uint64_t i = ts->ring.tail(); i < head; ++i) {
        OpSlot& slot = ts->ring.at(i);
        if (slot.state.load(std::memory_order_acquire) != kSlotComplete) continue;
        op_buf_.push_back(stored(snapshot(slot, static_cast<trace::OpStatus>(slot.rec.status))));
        if (slot.rec.status == static_cast<uint8_t>(trace::OpStatus::kAbandoned))
          remember_abandoned(op_buf_.back());
        slot.state.store(kSlotWritten, std::memory_order_release);
      }
      ts->ring.release_written();
    }
    if (op_buf_.empty()) return;
    const Status s = writer_->append(std::span<const trace::OpRecord>(op_buf_));
    if (!s.ok()) {
      fail("writing the trace", s);
      return;
    }
    ops_written_ += op_buf_.size();
  }

  void flush() {
    // Per-peer transfer windows (profiler plugin), closed at this flush.
    link_buf_.clear();
    link_table().drain(now_ns() - rt_.meta.clock_monotonic_ns, link_buf_);
    if (!link_buf_.empty()) {
      if (Status s = writer_->append(std::span<const trace::LinkRecord>(link_buf_)); !s.ok()) {
        fail("writing the trace", s);
        return;
      }
    }
    pending_buf_.clear();
    uint64_t dropped = 0;
    for (ThreadState* ts = rt_.threads.load(std::memory_order_acquire); ts != nullptr;
         ts = ts->next) {
      dropped += ts->dropped.load(std::memory_order_relaxed);
      const uint64_t head = ts->ring.head();
      for (uint64_t i = ts->ring.tail(); i < head; ++i) {
        const OpSlot& slot = ts->ring.at(i);
        const uint32_t state = slot.state.load(std::memory_order_acquire);
        if (state != kSlotHostPending && state != kSlotGroupDeferred && state != kSlotDevicePending)
          continue;
        // An op of an NCCL group is not on its way to the device before the group's
        // ncclGroupEnd returns: until then it is as pending on the host as a call that
        // has not returned.
        const bool on_host = state != kSlotDevicePending;
        trace::OpRecord r = snapshot(
            slot, on_host ? trace::OpStatus::kHostPending : trace::OpStatus::kDevicePending);
        // Only fields fixed at entry are trusted: the rest may be changing now.
        if (on_host) r.t_exit_ns = trace::kUnknownTime;
        r.t_dev_start_ns = state == kSlotDevicePending
                               ? slot.dev_start_seen.load(std::memory_order_acquire)
                               : trace::kUnknownTime;
        r.t_dev_end_ns = trace::kUnknownTime;
        pending_buf_.push_back(stored(r));
      }
    }
    pending_buf_.insert(pending_buf_.end(), abandoned_.begin(), abandoned_.end());
    trace::StatsRecord stats{};
    stats.t_ns = now_ns() - rt_.meta.clock_monotonic_ns;
    stats.ops_recorded = ops_written_;
    stats.ops_dropped = dropped;
    stats.samples_dropped = rt_.samples.dropped();
    stats.events_dropped = rt_.events.dropped() + rt_.comms.dropped();
    stats.probe_errors = rt_.probe_errors.load(std::memory_order_relaxed);
    const HostCpu cpu = process_host_cpu();
    stats.host_run_delay_ns = cpu.run_delay_ns;
    stats.probe_cpu_ns = cpu.probe_cpu_ns;
    const Status s = writer_->flush(std::span<const trace::OpRecord>(pending_buf_), stats);
    if (!s.ok()) fail("flushing the trace", s);
  }

  Runtime& rt_;
  std::unique_ptr<trace::TraceWriter> writer_;
  bool failed_ = false;
  uint64_t ops_written_ = 0;
  std::vector<trace::OpRecord> op_buf_;
  std::vector<trace::OpRecord> pending_buf_;
  // The latest ops an abort or destroy abandoned: every later /pending snapshot lists them
  // too, so that the final one says what the rank was waiting for when it gave up.
  static constexpr size_t kMaxAbandoned = 1024;
  std::vector<trace::OpRecord> abandoned_;
  void remember_abandoned(const trace::OpRecord& r) {
    if (abandoned_.size() == kMaxAbandoned) abandoned_.erase(abandoned_.begin());
    abandoned_.push_back(r);
  }
  std::vector<trace::EventRecord> event_buf_;
  std::vector<trace::CommRecord> comm_buf_;
  std::vector<trace::SampleRecord> sample_buf_;
  std::vector<trace::LinkRecord> link_buf_;
};

}  // namespace

bool start_writer(Runtime& rt, std::string& error) {
  return start_background_thread(
      "ringside-writer",
      [&rt] {
        auto* sink = new TraceSink(rt);  // never freed: exit may race with its last use
        sink->run();
      },
      error);
}

}  // namespace ringside::probe
