#include "synth/synth_writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "ringside/trace_writer.h"
#include "synth/synth_links.h"
#include "synth/synth_model.h"

namespace ringside::analysis::synth {
namespace {

using trace::OpRecord;

constexpr int64_t kEpochNs = 1'780'000'000'000'000'000;  // an arbitrary 2026 wall-clock origin
constexpr size_t kStage = 512;                           // ops buffered per rank before append

// NVML clock-event reason bits.
constexpr uint64_t kSwThermal = 0x20, kHwThermal = 0x40;

// Collects the ops of the ranks in [lo, hi) and appends them to their writers.
class BatchSink : public OpSink {
 public:
  BatchSink(int lo, int hi, const SynthModel& model,
            std::vector<std::unique_ptr<trace::TraceWriter>>& writers)
      : lo_(lo),
        hi_(hi),
        model_(model),
        writers_(writers),
        staged_(static_cast<size_t>(hi - lo)),
        counts_(static_cast<size_t>(hi - lo), 0) {
    if (model.spec().links) links_.emplace(model, lo, hi);
  }

  void ring(const RingTransfer& t) override {
    if (links_) links_->ring(t);
  }
  void peer(const PeerTransfer& t) override {
    if (links_) links_->peer(t);
  }
  // The rank's link rows so far (and, with `end_true_ns`, the open window's).
  std::vector<trace::LinkRecord> take_links(int rank, int64_t end_true_ns = -1) {
    return links_ ? links_->take(rank, end_true_ns) : std::vector<trace::LinkRecord>{};
  }
  // The rank's link rows of the flush windows that ended by job time `until`.
  std::vector<trace::LinkRecord> take_links_until(int rank, int64_t until) {
    return links_ ? links_->take_until(rank, until) : std::vector<trace::LinkRecord>{};
  }

  void op(int rank, const OpRecord& op) override {
    if (rank < lo_ || rank >= hi_) return;
    size_t i = static_cast<size_t>(rank - lo_);
    if (!writers_[i]) return;
    if (holding_) {
      held_[i].push_back(to_local(rank, op, model_));
      return;
    }
    staged_[i].push_back(to_local(rank, op, model_));
    ++counts_[i];
    if (staged_[i].size() >= kStage) drain(i);
  }

  // Keeps every op back until release() (a job whose traces grow while watched).
  void hold() {
    holding_ = true;
    held_.resize(staged_.size());
    released_.assign(staged_.size(), 0);
  }
  // Appends the held ops of `rank` that ended before job time `until`, in order of
  // their end (as the probe records them: once complete).
  Status release(int rank, int64_t until) {
    const size_t i = static_cast<size_t>(rank - lo_);
    std::vector<OpRecord>& h = held_[i];
    size_t& next = released_[i];
    auto end_of = [](const OpRecord& op) {
      return op.t_dev_end_ns != trace::kUnknownTime ? op.t_dev_end_ns : op.t_exit_ns;
    };
    if (next == 0) {
      std::stable_sort(h.begin(), h.end(),
                       [&](const OpRecord& a, const OpRecord& b) { return end_of(a) < end_of(b); });
    }
    const int64_t local_until = until - model_.process_start_ns(rank);
    const size_t from = next;
    while (next < h.size() && (until == INT64_MAX || end_of(h[next]) < local_until)) ++next;
    if (next == from) return {};
    counts_[i] += next - from;
    return writers_[i]->append(std::span<const OpRecord>(h.data() + from, next - from));
  }

  Status status() const { return status_; }
  uint64_t count(int rank) const { return counts_[static_cast<size_t>(rank - lo_)]; }
  void drain_all() {
    for (size_t i = 0; i < staged_.size(); ++i) drain(i);
  }

  static OpRecord to_local(int rank, OpRecord op, const SynthModel& m) {
    const int64_t start = m.process_start_ns(rank);
    for (int64_t* t : {&op.t_enter_ns, &op.t_exit_ns, &op.t_dev_start_ns, &op.t_dev_end_ns}) {
      if (*t != trace::kUnknownTime) *t -= start;
    }
    return op;
  }

 private:
  void drain(size_t i) {
    if (staged_[i].empty() || !writers_[i]) return;
    Status s = writers_[i]->append(std::span<const OpRecord>(staged_[i]));
    if (s.ok() && links_) {
      auto rows = links_->take(lo_ + static_cast<int>(i));
      s = writers_[i]->append(std::span<const trace::LinkRecord>(rows));
    }
    if (!s.ok() && status_.ok()) status_ = s;
    staged_[i].clear();
  }

  int lo_, hi_;
  const SynthModel& model_;
  std::vector<std::unique_ptr<trace::TraceWriter>>& writers_;
  std::vector<std::vector<OpRecord>> staged_;
  std::vector<uint64_t> counts_;
  bool holding_ = false;
  std::vector<std::vector<OpRecord>> held_;
  std::vector<size_t> released_;
  std::optional<LinkRows> links_;
  Status status_;
};

trace::TraceMeta make_meta(const SynthSpec& spec, const SynthModel& m, int rank) {
  trace::TraceMeta meta;
  meta.schema_version = trace::kSchemaVersion;
  meta.producer = "synth";
  meta.job_id = spec.job_id;
  meta.rank = rank;
  meta.local_rank = m.local_rank(rank);
  meta.world_size = spec.ranks;
  meta.rank_source = "none";
  meta.node = node_name(m.node_of(rank));
  meta.hostname = meta.node;
  meta.pid = 20000 + rank;
  meta.gpu_device = m.local_rank(rank);
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + 0x10 * m.local_rank(rank));
  meta.gpu_pci_bus_id = bus;
  meta.gpu_name = "synthetic H100-SXM5-80GB";
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-5e7d0000-%04d-%04d-0000-%012d", m.node_of(rank),
                m.local_rank(rank), rank);
  meta.gpu_uuid = uuid;
  meta.nccl_version = 22809;
  meta.cuda_driver_version = 13000;
  const int node = m.node_of(rank);
  const int64_t start = m.process_start_ns(rank);
  meta.clock_realtime_ns = kEpochNs + m.clock_offset_ns(node) + start;
  meta.clock_monotonic_ns = 1'000'000'000'000ll * (node + 1) + start;
  meta.config = R"({"producer":"ringside synth"})";
  meta.simulated = 0;
  return meta;
}

std::vector<trace::CommRecord> comm_records(const SynthModel& m, int rank) {
  std::vector<trace::CommRecord> out;
  for (int ci : m.comms_of(rank)) {
    const SynthComm& c = m.comms()[static_cast<size_t>(ci)];
    trace::CommRecord r{};
    r.t_ns = 500'000'000 + 1'000'000 * ci - m.process_start_ns(rank) + 1'000'000'000;
    r.comm_id = c.id;
    r.parent_id = c.parent;
    r.color = c.color;
    r.key = c.color >= 0 ? rank : -1;
    r.ordinal = c.ordinal;
    r.nranks = static_cast<int32_t>(c.members.size());
    r.rank = static_cast<int32_t>(std::find(c.members.begin(), c.members.end(), rank) -
                                  c.members.begin());
    r.device = m.local_rank(rank);
    r.origin = static_cast<uint8_t>(c.origin);
    out.push_back(r);
  }
  return out;
}

int64_t step_time(const SynthModel& m, int64_t step) {
  const auto& s = m.step_starts();
  if (s.empty()) return 0;
  return s[static_cast<size_t>(std::clamp<int64_t>(step, 0, static_cast<int64_t>(s.size()) - 1))];
}

// The rank's GPU samples taken in [from, until) (job time).
std::vector<trace::SampleRecord> samples(const SynthSpec& spec, const SynthModel& m, int rank,
                                         int64_t from = INT64_MIN, int64_t until = INT64_MAX) {
  std::vector<trace::SampleRecord> out;
  if (spec.sample_hz <= 0) return out;
  bool throttled = false;
  const Fault* ecc = nullptr;
  for (const Fault& f : spec.faults) {
    if (f.kind == FaultKind::kThrottle && f.rank == rank) throttled = true;
    if (f.kind == FaultKind::kEcc && f.rank == rank) ecc = &f;
  }
  const int64_t start = m.process_start_ns(rank);
  const int64_t period = static_cast<int64_t>(1e9 / spec.sample_hz);
  const int64_t end = m.ends()[static_cast<size_t>(rank)].last_flush_ns;
  const int64_t ecc_at = ecc ? step_time(m, ecc->step) : 0;
  int64_t t = start + period;
  if (from > t) t += (from - t + period - 1) / period * period;
  for (; t <= end && t < until; t += period) {
    trace::SampleRecord s{};
    s.t_ns = t - start;
    s.device = m.local_rank(rank);
    s.valid = 0x1ff;
    s.sm_clock_mhz = throttled ? 1365 : 1980;
    s.mem_clock_mhz = 2619;
    s.clock_event_reasons = throttled ? (kHwThermal | kSwThermal) : 0;
    s.temperature_c = throttled ? 91 : 52 + static_cast<uint32_t>(m.local_rank(rank) % 5);
    s.power_mw = throttled ? 450000 : 610000;
    s.util_gpu_pct = 97;
    s.util_mem_pct = 40;
    s.mem_used_bytes = 61ull << 30;
    if (ecc && t >= ecc_at) {
      s.ecc_uncorrected = 2;
      s.ecc_corrected = 14;
      s.remapped_rows = 1;
    }
    out.push_back(s);
  }
  return out;
}

trace::EventRecord event(trace::EventKind kind, int64_t t, int64_t value, int device,
                         const char* text) {
  trace::EventRecord e{};
  e.t_ns = t;
  e.kind = static_cast<uint32_t>(kind);
  e.value = value;
  e.device = device;
  std::snprintf(e.text, sizeof e.text, "%s", text);
  return e;
}

// Samples from job time `samples_from` on (those before were written while growing).
Status finish_rank(const SynthSpec& spec, const SynthModel& m, int rank, trace::TraceWriter& w,
                   uint64_t ops, BatchSink& sink, int64_t samples_from) {
  const int64_t start = m.process_start_ns(rank);
  const RankEnd& end = m.ends()[static_cast<size_t>(rank)];
  auto links = sink.take_links(rank, end.last_flush_ns);
  if (Status s = w.append(std::span<const trace::LinkRecord>(links)); !s.ok()) return s;
  auto smp = samples(spec, m, rank, samples_from);
  if (Status s = w.append(std::span<const trace::SampleRecord>(smp)); !s.ok()) return s;
  std::vector<trace::EventRecord> events;
  for (const Fault& f : spec.faults) {
    if (f.kind == FaultKind::kXid && f.rank == rank) {
      char text[64];
      std::snprintf(text, sizeof text, "Xid %lld on GPU %d", static_cast<long long>(f.code),
                    m.local_rank(rank));
      events.push_back(event(trace::EventKind::kXid, step_time(m, f.step) - start, f.code,
                             m.local_rank(rank), text));
    }
  }
  if (spec.live) {
    // Still running: neither a signal nor the end of tracing has been recorded.
  } else if (end.killed) {
    events.push_back(
        event(trace::EventKind::kSignal, end.last_flush_ns - start, 15, -1, "SIGTERM received"));
  } else if (!end.crashed) {
    events.push_back(event(trace::EventKind::kShutdown, end.last_flush_ns - start, 0, -1,
                           "tracing stopped at exit"));
  }
  if (Status s = w.append(std::span<const trace::EventRecord>(events)); !s.ok()) return s;
  std::vector<OpRecord> pending;
  for (const OpRecord& op : end.pending) pending.push_back(BatchSink::to_local(rank, op, m));
  trace::StatsRecord stats{};
  stats.t_ns = end.last_flush_ns - start;
  stats.ops_recorded = ops + pending.size();
  if (spec.host_wait > 0) {
    // The process's threads waited for a CPU this share of the time, from the start.
    trace::StatsRecord first{};
    first.t_ns = 1;  // at the start (0 would be read as "now")
    first.host_run_delay_ns = 1;
    if (Status s = w.flush({}, first); !s.ok()) return s;
    stats.flush_index = 1;
    stats.host_run_delay_ns =
        1 + static_cast<int64_t>(spec.host_wait * static_cast<double>(stats.t_ns));
  }
  if (Status s = w.flush(pending, stats); !s.ok()) return s;
  return w.close();
}

// The last spec.grow_steps steps of the ranks in [lo, hi), written one at a time: each
// round appends every rank's ops that ended, samples taken and link windows closed
// before the next step began, then flushes (a /stats row, as the probe's periodic flush); the rest
// is left to finish_rank.  Returns the job time up to which samples were written.
Result<int64_t> grow(const SynthSpec& spec, const SynthModel& model, int lo, int hi,
                     std::vector<std::unique_ptr<trace::TraceWriter>>& writers, BatchSink& sink,
                     const std::function<void(int, int)>& grown) {
  const auto& starts = model.step_starts();
  const int first_step = spec.steps - spec.grow_steps;
  const auto began = std::chrono::steady_clock::now();
  int64_t written_to = INT64_MIN;
  for (int k = 0; k < spec.grow_steps; ++k) {
    if (k > 0) {
      std::this_thread::sleep_until(began + std::chrono::duration<double>(k * spec.grow_every_s));
    }
    const size_t step = static_cast<size_t>(first_step + k);
    const int64_t until = step < starts.size() ? starts[step] : model.job_end_ns();
    for (int r = lo; r < hi; ++r) {
      auto& w = writers[static_cast<size_t>(r - lo)];
      if (!w) continue;
      if (Status s = sink.release(r, until); !s.ok()) return s;
      auto smp = samples(spec, model, r, written_to, until);
      if (Status s = w->append(std::span<const trace::SampleRecord>(smp)); !s.ok()) return s;
      auto links = sink.take_links_until(r, until);
      if (Status s = w->append(std::span<const trace::LinkRecord>(links)); !s.ok()) return s;
      trace::StatsRecord stats{};
      stats.t_ns = std::max<int64_t>(1, until - model.process_start_ns(r));
      stats.ops_recorded = sink.count(r);
      if (Status s = w->flush({}, stats); !s.ok()) return s;
    }
    written_to = until;
    if (grown) grown(first_step + k, spec.steps);
  }
  std::this_thread::sleep_until(began +
                                std::chrono::duration<double>(spec.grow_steps * spec.grow_every_s));
  for (int r = lo; r < hi; ++r) {
    if (writers[static_cast<size_t>(r - lo)]) {
      if (Status s = sink.release(r, INT64_MAX); !s.ok()) return s;
    }
  }
  return written_to;
}

}  // namespace

Result<SynthSummary> write_synth_traces(const SynthSpec& spec,
                                        const std::function<void(int, int)>& progress,
                                        const std::function<void(int, int)>& grown) {
  if (Status s = validate(spec); !s.ok()) return s;
  std::error_code ec;
  std::filesystem::create_directories(spec.out_dir, ec);
  if (ec)
    return Status::error(spec.out_dir + ": cannot create the output directory: " + ec.message());
  for (const auto& entry : std::filesystem::directory_iterator(spec.out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("ringside-", 0) == 0 && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".h5") == 0) {
      return Status::error(spec.out_dir + ": already holds trace files (" + name +
                           "); give an empty or new directory");
    }
  }
  std::vector<bool> missing(static_cast<size_t>(spec.ranks), false);
  for (const Fault& f : spec.faults) {
    if (f.kind == FaultKind::kMissing) missing[static_cast<size_t>(f.rank)] = true;
  }

  SynthModel model(spec);
  SynthSummary summary;
  // Growing files stand for a running job's: its tables in the probe's small chunks.
  trace::WriterOptions options =
      spec.grow_steps > 0 ? trace::flushing_writer_options() : trace::WriterOptions{};
  options.chunk_records = spec.chunk_records;
  // Growing files are written in rounds over every rank: all are open at once.
  const int batch = spec.grow_steps > 0 ? spec.ranks : std::max(1, spec.writer_batch);
  for (int lo = 0; lo < spec.ranks; lo += batch) {
    const int hi = std::min(spec.ranks, lo + batch);
    std::vector<std::unique_ptr<trace::TraceWriter>> writers(static_cast<size_t>(hi - lo));
    for (int r = lo; r < hi; ++r) {
      if (missing[static_cast<size_t>(r)]) continue;
      std::string path =
          (std::filesystem::path(spec.out_dir) / trace::trace_file_name(spec.job_id, r)).string();
      auto w = trace::TraceWriter::create(path, make_meta(spec, model, r), options);
      if (!w.ok()) return w.status();
      auto comms = comm_records(model, r);
      if (Status s = w.value()->append(std::span<const trace::CommRecord>(comms)); !s.ok())
        return s;
      writers[static_cast<size_t>(r - lo)] = std::move(w.value());
    }
    BatchSink sink(lo, hi, model, writers);
    if (spec.grow_steps > 0) sink.hold();
    model.run(sink);
    sink.drain_all();
    if (!sink.status().ok()) return sink.status();
    int64_t samples_from = INT64_MIN;
    if (spec.grow_steps > 0) {
      auto grown_to = grow(spec, model, lo, hi, writers, sink, grown);
      if (!grown_to.ok()) return grown_to.status();
      samples_from = grown_to.value();
    }
    for (int r = lo; r < hi; ++r) {
      auto& w = writers[static_cast<size_t>(r - lo)];
      if (!w) continue;
      if (Status s = finish_rank(spec, model, r, *w, sink.count(r), sink, samples_from); !s.ok())
        return s;
      summary.ops += sink.count(r);
      ++summary.files;
      w.reset();
    }
    if (progress) progress(hi, spec.ranks);
  }
  summary.hung = model.hung();
  summary.job_seconds = static_cast<double>(model.job_end_ns()) / 1e9;
  return summary;
}

}  // namespace ringside::analysis::synth
