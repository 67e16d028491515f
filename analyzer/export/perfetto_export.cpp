#include "export/perfetto_export.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "analyze.h"
#include "clock/clock_align.h"
#include "export/trace_event_writer.h"
#include "load/trace_set.h"
#include "match/own_compute.h"
#include "report/output_file.h"
#include "ringside/bandwidth.h"
#include "ringside/trace_reader.h"

namespace ringside::analysis {
namespace {

using trace::OpKind;
using trace::OpRecord;

constexpr size_t kFirstRows = 64;          // rows read per file to find the job's first op
constexpr int64_t kTidsPerRank = 1 << 20;  // track ids of rank r: r * kTidsPerRank + n

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// One rank's tracks: a stream's ops go on its first track where they nest (a
// slice starts no earlier than the one before it and ends inside every slice
// still open); ops that would overlap part of another go on a further track.
class RankTracks {
 public:
  RankTracks(TraceEventWriter& w, int pid, int64_t rank) : w_(w), pid_(pid), rank_(rank) {}

  Result<int64_t> place(uint64_t stream, int64_t start, int64_t end) {
    auto it = streams_.find(stream);
    if (it == streams_.end()) it = streams_.emplace(stream, Stream{streams_.size(), {}}).first;
    Stream& s = it->second;
    for (Lane& lane : s.lanes) {
      if (start < lane.last_start) continue;
      while (!lane.open.empty() && lane.open.back() <= start) lane.open.pop_back();
      if (!lane.open.empty() && end > lane.open.back()) continue;
      lane.last_start = start;
      lane.open.push_back(end);
      return lane.tid;
    }
    const int64_t tid = rank_ * kTidsPerRank + next_++;
    std::string name = "rank " + std::to_string(rank_) + " stream " + std::to_string(s.ordinal) +
                       " (" + hex(stream) + ")";
    if (!s.lanes.empty()) name += " overlap " + std::to_string(s.lanes.size());
    if (Status st = w_.thread_name(pid_, tid, name, tid); !st.ok()) return st;
    s.lanes.push_back({start, {end}, tid});
    return tid;
  }

 private:
  struct Lane {
    int64_t last_start;
    std::vector<int64_t> open;  // ends of the slices still open, innermost last
    int64_t tid;
  };
  struct Stream {
    size_t ordinal;
    std::vector<Lane> lanes;
  };
  TraceEventWriter& w_;
  int pid_;
  int64_t rank_;
  int64_t next_ = 0;
  std::map<uint64_t, Stream> streams_;
};

struct Window {
  int64_t lo = INT64_MIN, hi = INT64_MAX;  // job ns
  bool overlaps(int64_t a, int64_t b) const { return b >= lo && a <= hi; }
};

// The earliest arrival among each file's first rows: the timeline's 0.
int64_t job_start(const TraceSet& set) {
  int64_t t0 = INT64_MAX;
  std::vector<OpRecord> rows(kFirstRows);
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file || !ri.read_error.empty()) continue;
    auto reader = trace::TraceReader::open(ri.path);
    if (!reader.ok()) continue;
    auto n = reader.value()->read_ops(0, rows);
    for (size_t i = 0; n.ok() && i < n.value(); ++i) {
      const OpTimes t = op_times(ri, rows[i]);
      if (t.arrival != kNever) t0 = std::min(t0, t.arrival);
    }
    for (const OpRecord& op : ri.pending) {
      const OpTimes t = op_times(ri, op);
      if (t.arrival != kNever) t0 = std::min(t0, t.arrival);
    }
  }
  return t0 == INT64_MAX ? 0 : t0;
}

// Job time the op (comm, seq) began on the first of `ranks` that has it.
std::optional<int64_t> op_time(const TraceSet& set, const std::vector<int64_t>& ranks,
                               uint64_t comm, uint64_t seq, size_t batch) {
  for (int64_t r : ranks) {
    if (r < 0 || static_cast<size_t>(r) >= set.ranks.size()) continue;
    const RankInfo& ri = set.ranks[static_cast<size_t>(r)];
    if (!ri.has_file) continue;
    std::optional<int64_t> found;
    auto match = [&](const OpRecord& op) {
      if (op.comm_id != comm || op.seq != seq || trace::is_p2p(static_cast<OpKind>(op.op)))
        return false;
      const OpTimes t = op_times(ri, op);
      if (t.arrival != kNever) found = t.arrival;
      return found.has_value();
    };
    for (const OpRecord& op : ri.pending)
      if (match(op)) return found;
    auto reader = trace::TraceReader::open(ri.path);
    if (!reader.ok()) continue;
    Status s = reader.value()->for_each_op_batch(batch, [&](std::span<const OpRecord> ops) {
      for (const OpRecord& op : ops)
        if (match(op)) return false;
      return true;
    });
    if (found) return found;
  }
  return std::nullopt;
}

class Exporter {
 public:
  Exporter(const TraceSet& set, const Report& report, TraceEventWriter& w, Window window,
           int64_t t0)
      : set_(set), report_(report), w_(w), window_(window), t0_(t0) {
    const nlohmann::json& profile = report.extra.value("profile", nlohmann::json::object());
    for (const auto& c : profile.value("comms", nlohmann::json::array()))
      labels_[c.at("comm").get<std::string>()] = c.at("label").get<std::string>();
    for (size_t i = 0; i < report.findings.size(); ++i) {
      const Finding& f = report.findings[i];
      if (f.comm && f.seq) finding_ops_[{*f.comm, *f.seq}].push_back(i);
    }
    finding_time_.assign(report.findings.size(), kNever);
  }

  Status rank(const RankInfo& ri, size_t batch) {
    auto reader = trace::TraceReader::open(ri.path);
    if (!reader.ok()) return reader.status();
    const int pid = ri.node_index + 1;
    RankTracks tracks(w_, pid, ri.rank);
    const int64_t last_flush = ri.to_job(ri.last_flush_local);
    Status failed;
    Status s = reader.value()->for_each_op_batch(batch, [&](std::span<const OpRecord> ops) {
      for (const OpRecord& op : ops) {
        if (Status e = op_slice(ri, tracks, op, false, last_flush); !e.ok()) {
          failed = e;
          return false;
        }
      }
      return true;
    });
    if (!failed.ok()) return failed;
    if (!s.ok()) return s;
    for (const OpRecord& op : ri.pending)
      if (Status e = op_slice(ri, tracks, op, true, last_flush); !e.ok()) return e;
    return counters(ri, *reader.value(), pid);
  }

  Status findings() {
    for (size_t i = 0; i < report_.findings.size(); ++i) {
      const Finding& f = report_.findings[i];
      // A finding without an op of its own (a straggler, a slow link) holds for
      // the whole run: marked where the window begins; one whose op is outside the
      // window, at the window's nearer edge.
      const int64_t at = finding_time_[i];
      const int64_t lo = window_.lo != INT64_MIN ? window_.lo : t0_;
      const int64_t t = at == kNever ? lo : std::clamp(at, lo, window_.hi);
      nlohmann::json args = {
          {"kind", f.kind},         {"subkind", f.subkind},   {"ranks", f.ranks},
          {"nodes", f.nodes},       {"severity", f.severity}, {"confidence", f.confidence},
          {"evidence", f.evidence}, {"cost_s", f.cost_s},     {"at_op", at != kNever && at == t}};
      if (at != kNever) args["op_time_s"] = static_cast<double>(at - t0_) / 1e9;
      if (f.comm) args["comm"] = hex(*f.comm);
      if (f.seq) args["seq"] = *f.seq;
      const std::string name = "finding " + std::to_string(i + 1) + ": " + f.kind +
                               (f.subkind.empty() ? "" : " (" + f.subkind + ")");
      if (Status s = w_.instant(name, "finding", t - t0_, args); !s.ok()) return s;
      ++findings_;
    }
    return {};
  }

  uint64_t slices() const { return slices_; }
  uint64_t counter_events() const { return counters_; }
  uint64_t finding_events() const { return findings_; }
  int64_t last_end() const { return last_end_; }

 private:
  Status op_slice(const RankInfo& ri, RankTracks& tracks, const OpRecord& op, bool pending,
                  int64_t last_flush) {
    const OpTimes t = op_times(ri, op);
    if (t.arrival == kNever) return {};
    const bool unfinished = pending || t.end == kNever;
    const int64_t end = unfinished ? std::max(t.arrival, last_flush) : t.end;
    const OpKind kind = static_cast<OpKind>(op.op);
    const bool p2p = trace::is_p2p(kind);
    if (!p2p) {
      auto it = finding_ops_.find({op.comm_id, op.seq});
      if (it != finding_ops_.end())
        for (size_t i : it->second)
          if (finding_time_[i] == kNever || t.arrival < finding_time_[i])
            finding_time_[i] = t.arrival;
    }
    if (end < t.arrival || !window_.overlaps(t.arrival, end)) return {};
    auto tid = tracks.place(op.stream, t.arrival, end);
    if (!tid.ok()) return tid.status();
    const std::string comm = hex(op.comm_id);
    nlohmann::json args = {{"rank", ri.rank}, {"comm", comm}, {"bytes", op.bytes}};
    if (auto l = labels_.find(comm); l != labels_.end()) args["comm_label"] = l->second;
    if (p2p) {
      args["peer"] = op.peer;
      args["peer_seq"] = op.peer_seq;
    } else {
      args["seq"] = op.seq;
    }
    const CommInfo* c = set_.comm(op.comm_id);
    if (!unfinished && end > t.arrival) {
      const Bandwidth bw = compute_bandwidth(
          kind, op.bytes, static_cast<double>(end - t.arrival) / 1e9, c ? c->nranks : 1);
      args["busbw_gbps"] = bw.bus_gbps;
    }
    args["timing"] = op.t_dev_start_ns != trace::kUnknownTime ? "device" : "host";
    if (unfinished) args["unfinished"] = true;
    ++slices_;
    last_end_ = std::max(last_end_, end);
    return w_.slice(ri.node_index + 1, tid.value(), trace::op_kind_name(kind),
                    p2p ? "p2p" : "collective", t.arrival - t0_, end - t.arrival, args);
  }

  Status counters(const RankInfo& ri, const trace::TraceReader& reader, int pid) {
    auto samples = reader.samples();
    if (!samples.ok()) return samples.status();
    const std::string prefix = "rank " + std::to_string(ri.rank) + " ";
    for (const trace::SampleRecord& s : samples.value()) {
      const int64_t t = ri.to_job(s.t_ns);
      if (!window_.overlaps(t, t)) continue;
      auto put = [&](uint32_t bit, const char* name, double v) {
        if (!(s.valid & bit)) return Status{};
        ++counters_;
        return w_.counter(pid, prefix + name, t - t0_, v);
      };
      for (Status st : {put(trace::kValidClocks, "sm_clock_mhz", s.sm_clock_mhz),
                        put(trace::kValidTemperature, "temperature_c", s.temperature_c),
                        put(trace::kValidPower, "power_w", s.power_mw / 1000.0),
                        put(trace::kValidUtilization, "util_gpu_pct", s.util_gpu_pct)})
        if (!st.ok()) return st;
    }
    return {};
  }

  const TraceSet& set_;
  const Report& report_;
  TraceEventWriter& w_;
  Window window_;
  int64_t t0_;
  std::unordered_map<std::string, std::string> labels_;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<size_t>> finding_ops_;
  std::vector<int64_t> finding_time_;
  uint64_t slices_ = 0, counters_ = 0, findings_ = 0;
  int64_t last_end_ = kNever;
};

}  // namespace

Result<ExportSummary> export_perfetto(const std::string& dir, const std::string& out_path,
                                      const ExportOptions& options) {
  if (options.from_s && options.to_s && *options.to_s <= *options.from_s)
    return Status::error("--to must be after --from");
  AnalyzeOptions analyze;
  analyze.progress = false;
  analyze.step = options.step;
  auto analyzed = analyze_directory(dir, analyze);
  if (!analyzed.ok()) return analyzed.status();
  const Report& report = analyzed.value();

  Progress quiet(false);
  LoadOptions load;
  load.step = options.step;
  auto loaded = load_trace_set(dir, load, quiet);
  if (!loaded.ok()) return loaded.status();
  TraceSet& set = loaded.value();
  align_clocks(set);
  const int64_t t0 = job_start(set);

  Window window;
  if (options.around_finding) {
    const size_t n = *options.around_finding;
    if (n == 0 || n > report.findings.size())
      return Status::error("--around-finding " + std::to_string(n) + ": the report has " +
                           std::to_string(report.findings.size()) + " findings (numbered from 1)");
    const Finding& f = report.findings[n - 1];
    if (!f.comm || !f.seq)
      return Status::error("--around-finding " + std::to_string(n) + ": finding " + f.kind +
                           " holds for the whole run, not at one op; use --from/--to");
    std::vector<int64_t> ranks = f.ranks;
    ranks.insert(ranks.end(), f.comm_members.begin(), f.comm_members.end());
    const auto at = op_time(set, ranks, *f.comm, *f.seq, options.batch);
    if (!at)
      return Status::error("--around-finding " + std::to_string(n) + ": no trace holds its op");
    const auto half = static_cast<int64_t>(options.span_s * 0.5e9);
    window.lo = *at - half;
    window.hi = *at + half;
  }
  if (options.from_s) window.lo = t0 + static_cast<int64_t>(*options.from_s * 1e9);
  if (options.to_s) window.hi = t0 + static_cast<int64_t>(*options.to_s * 1e9);

  auto out = OutputFile::open(out_path, '{');
  if (!out.ok()) return out.status();
  TraceEventWriter w(out.value());
  if (Status s = w.begin(); !s.ok()) return s;
  for (size_t i = 0; i < set.nodes.size(); ++i)
    if (Status s = w.process_name(static_cast<int>(i) + 1, set.nodes[i], static_cast<int>(i) + 1);
        !s.ok())
      return s;
  Exporter exporter(set, report, w, window, t0);
  for (const RankInfo& ri : set.ranks) {
    if (!ri.has_file || !ri.read_error.empty()) continue;
    if (Status s = exporter.rank(ri, options.batch); !s.ok()) return s;
  }
  if (Status s = exporter.findings(); !s.ok()) return s;

  ExportSummary sum;
  sum.from_s = window.lo == INT64_MIN ? 0 : static_cast<double>(window.lo - t0) / 1e9;
  const int64_t hi = window.hi != INT64_MAX          ? window.hi
                     : exporter.last_end() != kNever ? exporter.last_end()
                                                     : t0;
  sum.to_s = static_cast<double>(hi - t0) / 1e9;
  const nlohmann::json other = {{"producer", "ringside export"},
                                {"job", report.job},
                                {"ranks", report.ranks},
                                {"verdict", report.verdict},
                                {"window_from_s", sum.from_s},
                                {"window_to_s", sum.to_s},
                                {"clock_aligned", report.clock.aligned},
                                {"simulated", report.simulated}};
  if (Status s = w.end(other); !s.ok()) return s;
  if (Status s = out.value().commit(); !s.ok()) return s;
  sum.events = w.events();
  sum.slices = exporter.slices();
  sum.counters = exporter.counter_events();
  sum.findings = exporter.finding_events();
  return sum;
}

}  // namespace ringside::analysis
