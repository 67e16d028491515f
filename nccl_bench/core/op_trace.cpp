#include "core/op_trace.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "core/errors.h"
#include "ringside/trace_meta.h"

namespace ringside::bench {

namespace {
// Outstanding ops per rank written to the /pending snapshot after a failure.
constexpr size_t kMaxPendingShown = 256;
}  // namespace

OpTrace::OpTrace(const std::string& dir, World& world, const std::string& config_json)
    : dir_(dir), comm_id_(world.comm_id()) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw UsageError("--trace-dir '" + dir + "': cannot create the directory (" + ec.message() +
                     "); give a writable path");
  }
  int nccl_version = 0;
  ncclGetVersion(&nccl_version);
  int driver_version = 0;
  cudaDriverGetVersion(&driver_version);
  const ProcessIdentity& id = world.identity();
  for (LocalRank& l : world.locals()) {
    const RankInfo& info = world.rank_infos()[static_cast<size_t>(l.rank)];
    trace::TraceMeta meta;
    meta.schema_version = trace::kSchemaVersion;
    meta.producer = "nccl_bench";
    meta.job_id = world.job_id();
    meta.step_id = id.step_id;
    meta.rank = l.rank;
    meta.local_rank = l.local_rank;
    meta.world_size = world.nranks();
    meta.rank_source = id.source == "mpi" ? "openmpi" : id.source;
    meta.node = id.node;
    meta.hostname = id.hostname;
    meta.pid = info.pid;
    meta.gpu_device = l.cs.device;
    meta.gpu_pci_bus_id = info.bus_id;
    meta.gpu_name = info.gpu_name;
    meta.gpu_uuid = info.gpu_uuid;
    meta.nccl_version = nccl_version;
    meta.cuda_driver_version = driver_version;
    meta.config = config_json;
    meta.simulated = 0;  // nccl_bench cannot tell; the sim labels its devices itself
    trace::stamp_clock_reference(meta);
    const std::string path =
        (std::filesystem::path(dir) / trace::trace_file_name(world.job_id(), l.rank, id.step_id))
            .string();
    auto writer = trace::TraceWriter::create(path, meta);
    if (!writer.ok()) throw RuntimeError("cannot create trace " + path + ": " + writer.message());
    PerLocal p;
    p.writer = std::move(writer.value());
    p.cs = l.cs;
    p.base_ns = meta.clock_monotonic_ns;
    p.rank = l.rank;
    p.nranks = world.nranks();
    p.send_seq.assign(static_cast<size_t>(p.nranks), 0);
    p.recv_seq.assign(static_cast<size_t>(p.nranks), 0);
    trace::CommRecord comm{};
    comm.t_ns = trace::monotonic_now_ns() - meta.clock_monotonic_ns;
    comm.comm_id = comm_id_;
    comm.parent_id = 0;
    comm.color = -1;
    comm.key = -1;
    comm.ordinal = 0;
    comm.nranks = world.nranks();
    comm.rank = l.rank;
    comm.device = l.cs.device;
    comm.origin = static_cast<uint8_t>(trace::CommOrigin::kBench);
    locals_.push_back(std::move(p));
    check(locals_.back().writer->append(std::span<const trace::CommRecord>(&comm, 1)),
          "comm record");
  }
}

OpTrace::~OpTrace() {
  try {
    close();
  } catch (const std::exception&) {
    // close() already reported; destructors must not throw.
  }
  for (PerLocal& p : locals_) {
    for (cudaEvent_t e : p.events) cudaEventDestroy(e);
  }
}

void OpTrace::check(const Status& s, const std::string& what) {
  if (!s.ok()) throw RuntimeError("trace " + what + ": " + s.message());
}

void OpTrace::before(size_t local, bool timed) {
  PerLocal& p = locals_[local];
  p.current_slot = -1;
  if (timed) {
    const size_t need = static_cast<size_t>(2 * (p.next_slot + 1));
    RINGSIDE_CUDA_CHECK(cudaSetDevice(p.cs.device));
    while (p.events.size() < need) {
      cudaEvent_t e;
      RINGSIDE_CUDA_CHECK(cudaEventCreate(&e));
      p.events.push_back(e);
    }
    p.current_slot = p.next_slot++;
    RINGSIDE_CUDA_CHECK(
        cudaEventRecord(p.events[2 * static_cast<size_t>(p.current_slot)], p.cs.stream));
  }
  p.current_enter = trace::monotonic_now_ns();
}

void OpTrace::after(size_t local, const OpDesc& op) {
  PerLocal& p = locals_[local];
  trace::OpRecord r{};
  r.t_enter_ns = p.current_enter;
  r.t_exit_ns = trace::monotonic_now_ns();
  r.t_dev_start_ns = trace::kUnknownTime;
  r.t_dev_end_ns = trace::kUnknownTime;
  r.comm_id = comm_id_;
  r.seq = p.seq++;
  r.count = op.count;
  r.bytes = op.bytes;
  r.stream = reinterpret_cast<uint64_t>(p.cs.stream);
  r.group_id = 0;
  r.peer = op.peer;
  r.peer_seq = 0;
  if (op.kind == trace::OpKind::kSend && op.peer >= 0)
    r.peer_seq = p.send_seq[static_cast<size_t>(op.peer)]++;
  if (op.kind == trace::OpKind::kRecv && op.peer >= 0)
    r.peer_seq = p.recv_seq[static_cast<size_t>(op.peer)]++;
  r.op = static_cast<uint8_t>(op.kind);
  r.dtype = op.dtype;
  r.redop = op.redop;
  r.flags = op.flags;
  r.status = static_cast<uint8_t>(trace::OpStatus::kComplete);
  p.pending.push_back({r, p.current_slot});
}

void OpTrace::end_op(size_t local) {
  PerLocal& p = locals_[local];
  if (p.current_slot >= 0) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(p.cs.device));
    RINGSIDE_CUDA_CHECK(
        cudaEventRecord(p.events[2 * static_cast<size_t>(p.current_slot) + 1], p.cs.stream));
  }
  p.current_slot = -1;
}

void OpTrace::complete(size_t local) {
  PerLocal& p = locals_[local];
  if (p.pending.empty()) return;
  cudaEvent_t now_event = nullptr;
  int64_t now_host = 0;
  if (p.next_slot > 0) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(p.cs.device));
    RINGSIDE_CUDA_CHECK(cudaEventCreate(&now_event));
    RINGSIDE_CUDA_CHECK(cudaEventRecord(now_event, p.cs.stream));
    RINGSIDE_CUDA_CHECK(cudaEventSynchronize(now_event));
    now_host = trace::monotonic_now_ns();
  }
  std::vector<trace::OpRecord> out;
  out.reserve(p.pending.size());
  for (Pending& pd : p.pending) {
    if (pd.event_slot >= 0) {
      float start_ms = 0, end_ms = 0;
      const size_t k = 2 * static_cast<size_t>(pd.event_slot);
      if (cudaEventElapsedTime(&start_ms, p.events[k], now_event) == cudaSuccess &&
          cudaEventElapsedTime(&end_ms, p.events[k + 1], now_event) == cudaSuccess) {
        pd.rec.t_dev_start_ns =
            now_host - static_cast<int64_t>(static_cast<double>(start_ms) * 1e6);
        pd.rec.t_dev_end_ns = now_host - static_cast<int64_t>(static_cast<double>(end_ms) * 1e6);
        pd.rec.flags |= trace::kFlagDeviceTimed;
      }
    }
    out.push_back(pd.rec);
  }
  if (now_event != nullptr) cudaEventDestroy(now_event);
  p.pending.clear();
  p.next_slot = 0;
  p.recorded += out.size();
  // Trace times are relative to the file's clock reference (trace_schema.h).
  for (trace::OpRecord& r : out) {
    r.t_enter_ns -= p.base_ns;
    r.t_exit_ns -= p.base_ns;
    if (r.t_dev_start_ns != trace::kUnknownTime) r.t_dev_start_ns -= p.base_ns;
    if (r.t_dev_end_ns != trace::kUnknownTime) r.t_dev_end_ns -= p.base_ns;
  }
  check(p.writer->append(std::span<const trace::OpRecord>(out)), "append ops");
}

void OpTrace::flush(size_t first, size_t count) {
  for (size_t i = first; i < first + count && i < locals_.size(); ++i) {
    PerLocal& p = locals_[i];
    trace::StatsRecord stats{};
    stats.t_ns = trace::monotonic_now_ns() - p.base_ns;
    stats.ops_recorded = p.recorded;
    check(p.writer->flush({}, stats), "flush");
  }
}

void OpTrace::close_after_failure(const CommFailure& failure) {
  if (closed_) return;
  const bool timeout = failure.kind() == FailureKind::kTimeout;
  std::string what;
  if (failure.kind() == FailureKind::kElsewhere) {
    what = "another thread of this process failed";
  } else if (timeout) {
    what = "wait timed out (-T)";
  } else {
    what = std::string("ncclCommGetAsyncError: ") + ncclGetErrorString(failure.code());
  }
  if (!failure.peers().empty()) what += "; peer rank " + std::to_string(failure.peers().front());
  for (PerLocal& p : locals_) {
    if (!p.writer) continue;
    const int64_t now = trace::monotonic_now_ns() - p.base_ns;
    std::vector<trace::OpRecord> outstanding;
    for (const Pending& pd : p.pending) {
      trace::OpRecord r = pd.rec;
      r.status = static_cast<uint8_t>(trace::OpStatus::kDevicePending);
      r.t_enter_ns -= p.base_ns;
      r.t_exit_ns -= p.base_ns;
      outstanding.push_back(r);
    }
    const uint64_t seq = outstanding.empty() ? p.seq : outstanding.front().seq;
    trace::EventRecord ev{};
    ev.t_ns = now;
    ev.comm_id = comm_id_;
    ev.seq = seq;
    ev.device = p.cs.device;
    ev.kind = static_cast<uint32_t>(timeout ? trace::EventKind::kWatchdog
                                            : trace::EventKind::kAsyncError);
    ev.value = timeout ? static_cast<int64_t>(failure.waited_seconds() * 1e9)
                       : static_cast<int64_t>(failure.code());
    std::snprintf(ev.text, sizeof ev.text, "%s", what.c_str());
    check(p.writer->append(std::span<const trace::EventRecord>(&ev, 1)), "failure event");
    trace::StatsRecord stats{};
    stats.t_ns = now;
    stats.ops_recorded = p.recorded;
    // A stream runs in order: the first outstanding ops show where it is stuck;
    // all of them go to /ops below.
    const size_t shown = std::min(outstanding.size(), kMaxPendingShown);
    check(p.writer->flush(std::span<const trace::OpRecord>(outstanding.data(), shown), stats),
          "flush");
    trace::EventRecord abort_ev = ev;
    abort_ev.kind = static_cast<uint32_t>(trace::EventKind::kCommAbort);
    abort_ev.value = 0;
    std::snprintf(abort_ev.text, sizeof abort_ev.text, "ncclCommAbort after %zu outstanding ops",
                  outstanding.size());
    check(p.writer->append(std::span<const trace::EventRecord>(&abort_ev, 1)), "abort event");
    for (trace::OpRecord& r : outstanding)
      r.status = static_cast<uint8_t>(trace::OpStatus::kAbandoned);
    check(p.writer->append(std::span<const trace::OpRecord>(outstanding)), "abandoned ops");
    p.recorded += outstanding.size();
    p.pending.clear();
  }
  close();
}

void OpTrace::close() {
  if (closed_) return;
  closed_ = true;
  for (PerLocal& p : locals_) {
    if (!p.writer) continue;
    // The clean end of tracing, as the probe records it: without it the
    // analyzer would take the benchmark for a killed process.
    trace::EventRecord done{};
    done.t_ns = trace::monotonic_now_ns() - p.base_ns;
    done.device = -1;
    done.kind = static_cast<uint32_t>(trace::EventKind::kShutdown);
    std::snprintf(done.text, sizeof done.text, "trace closed");
    check(p.writer->append(std::span<const trace::EventRecord>(&done, 1)), "shutdown event");
    check(p.writer->close(), "close");
  }
}

}  // namespace ringside::bench
