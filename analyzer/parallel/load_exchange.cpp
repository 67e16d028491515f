#include "parallel/load_exchange.h"

#include <utility>

#include "load/trace_set.h"
#include "parallel/byte_stream.h"

namespace ringside::analysis {
namespace {

// Items [first, last) of `n` that process `part` of `parts` takes: contiguous, so that
// process order is file order.
std::pair<size_t, size_t> slice(size_t n, int part, int parts) {
  const auto p = static_cast<size_t>(part), k = static_cast<size_t>(parts);
  return {n * p / k, n * (p + 1) / k};
}

void put_check(ByteWriter& w, const trace::TraceFileCheck& c) {
  w.put_string(c.path);
  w.put_string(c.error);
  w.put<bool>(c.unsupported_version);
  w.put_string(c.job);
  w.put_string(c.step);
  w.put<int64_t>(c.rank);
  w.put<int64_t>(c.world_size);
}

trace::TraceFileCheck get_check(ByteReader& r) {
  trace::TraceFileCheck c;
  c.path = r.get_string();
  c.error = r.get_string();
  c.unsupported_version = r.get<bool>();
  c.job = r.get_string();
  c.step = r.get_string();
  c.rank = r.get<int64_t>();
  c.world_size = r.get<int64_t>();
  return c;
}

template <typename K, typename V, typename M>
void put_map(ByteWriter& w, const M& m) {
  w.put<uint64_t>(m.size());
  for (const auto& [k, v] : m) {
    w.put<K>(k);
    w.put<V>(v);
  }
}

template <typename K, typename V, typename M>
void get_map(ByteReader& r, M& m) {
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    const K k = r.get<K>();
    m.emplace(k, r.get<V>());
  }
}

// A field added to GpuSummary must be exchanged too (put_gpu, get_gpu).
static_assert(sizeof(GpuSummary) == 160, "GpuSummary changed: update put_gpu and get_gpu");

void put_gpu(ByteWriter& w, const GpuSummary& g) {
  w.put(g.samples);
  w.put(g.clock_samples);
  w.put(g.slowdown_samples);
  w.put(g.slowdown_reasons);
  w.put(g.median_sm_clock_mhz);
  w.put(g.max_sm_clock_mhz);
  w.put(g.max_temperature_c);
  w.put(g.ecc_uncorrected_first);
  w.put(g.ecc_uncorrected_last);
  w.put(g.ecc_corrected_first);
  w.put(g.ecc_corrected_last);
  w.put(g.remapped_first);
  w.put(g.remapped_last);
  w.put(g.pcie_replays_first);
  w.put(g.pcie_replays_last);
  w.put(g.first_slowdown_ns);
  w.put(g.util_samples);
  w.put(g.util_gpu_sum_pct);
  w.put(g.util_mem_sum_pct);
  w.put(g.mem_used_max_bytes);
  w.put_vector(g.series);
}

GpuSummary get_gpu(ByteReader& r) {
  GpuSummary g;
  g.samples = r.get<uint64_t>();
  g.clock_samples = r.get<uint64_t>();
  g.slowdown_samples = r.get<uint64_t>();
  g.slowdown_reasons = r.get<uint64_t>();
  g.median_sm_clock_mhz = r.get<double>();
  g.max_sm_clock_mhz = r.get<uint32_t>();
  g.max_temperature_c = r.get<uint32_t>();
  g.ecc_uncorrected_first = r.get<uint64_t>();
  g.ecc_uncorrected_last = r.get<uint64_t>();
  g.ecc_corrected_first = r.get<uint64_t>();
  g.ecc_corrected_last = r.get<uint64_t>();
  g.remapped_first = r.get<uint32_t>();
  g.remapped_last = r.get<uint32_t>();
  g.pcie_replays_first = r.get<uint32_t>();
  g.pcie_replays_last = r.get<uint32_t>();
  g.first_slowdown_ns = r.get<int64_t>();
  g.util_samples = r.get<uint64_t>();
  g.util_gpu_sum_pct = r.get<double>();
  g.util_mem_sum_pct = r.get<double>();
  g.mem_used_max_bytes = r.get<uint64_t>();
  g.series = r.get_vector<GpuPoint>();
  return g;
}

// A field added to RankFile must be exchanged too (put_rank_file, get_rank_file).
static_assert(sizeof(RankFile) == 808, "RankFile changed: update put_rank_file and get_rank_file");

void put_rank_file(ByteWriter& w, const RankFile& f) {
  w.put(f.rank);
  w.put_string(f.path);
  w.put_string(f.open_error);
  w.put_string(f.comms_error);
  w.put_vector(f.comms);
  w.put_string(f.node);
  w.put(f.local_rank);
  w.put(f.gpu_device);
  w.put(f.pid);
  w.put_string(f.gpu_name);
  w.put_string(f.gpu_uuid);
  w.put_string(f.gpu_pci_bus_id);
  w.put_string(f.producer);
  w.put(f.simulated);
  w.put(f.clock_realtime_ns);
  w.put(f.clock_monotonic_ns);
  w.put(f.op_count);
  w.put(f.first_row);
  w.put<uint64_t>(f.errors.size());
  for (const std::string& e : f.errors) w.put_string(e);
  w.put_vector(f.events);
  w.put(f.shutdown);
  w.put(f.last_signal);
  w.put(f.last_flush_local);
  w.put_vector(f.run_delay);
  w.put(f.ops_dropped);
  w.put(f.probe_cpu_ns);
  w.put_vector(f.pending);
  put_gpu(w, f.gpu);
  w.put_vector(f.links);
  w.put_vector(f.clock_samples);
  put_map<uint64_t, uint64_t>(w, f.firsts.seq);
  put_map<P2PChannelId, uint32_t>(w, f.firsts.peer_seq);
}

RankFile get_rank_file(ByteReader& r) {
  RankFile f;
  f.rank = r.get<int64_t>();
  f.path = r.get_string();
  f.open_error = r.get_string();
  f.comms_error = r.get_string();
  f.comms = r.get_vector<trace::CommRecord>();
  f.node = r.get_string();
  f.local_rank = r.get<int64_t>();
  f.gpu_device = r.get<int64_t>();
  f.pid = r.get<int64_t>();
  f.gpu_name = r.get_string();
  f.gpu_uuid = r.get_string();
  f.gpu_pci_bus_id = r.get_string();
  f.producer = r.get_string();
  f.simulated = r.get<bool>();
  f.clock_realtime_ns = r.get<int64_t>();
  f.clock_monotonic_ns = r.get<int64_t>();
  f.op_count = r.get<uint64_t>();
  f.first_row = r.get<uint64_t>();
  for (auto n = r.get<uint64_t>(); n > 0; --n) f.errors.push_back(r.get_string());
  f.events = r.get_vector<trace::EventRecord>();
  f.shutdown = r.get<bool>();
  f.last_signal = r.get<int64_t>();
  f.last_flush_local = r.get<int64_t>();
  f.run_delay = r.get_vector<std::pair<int64_t, int64_t>>();
  f.ops_dropped = r.get<uint64_t>();
  f.probe_cpu_ns = r.get<int64_t>();
  f.pending = r.get_vector<trace::OpRecord>();
  f.gpu = get_gpu(r);
  f.links = r.get_vector<trace::LinkRecord>();
  f.clock_samples = r.get_vector<ClockSample>();
  get_map<uint64_t, uint64_t>(r, f.firsts.seq);
  get_map<P2PChannelId, uint32_t>(r, f.firsts.peer_seq);
  return f;
}

}  // namespace

trace::CheckTraceFiles check_files_across(ProcessGroup& group) {
  return [&group](const std::vector<std::string>& candidates) {
    const auto [first, last] = slice(candidates.size(), group.rank(), group.size());
    ByteWriter w;
    const std::vector<std::string> share(candidates.begin() + static_cast<ptrdiff_t>(first),
                                         candidates.begin() + static_cast<ptrdiff_t>(last));
    for (const trace::TraceFileCheck& c : trace::check_trace_files(share)) put_check(w, c);
    std::vector<trace::TraceFileCheck> all;
    all.reserve(candidates.size());
    group.all_gather(w.take(), [&](std::string_view part) {
      for (ByteReader r(part); !r.done();) all.push_back(get_check(r));
    });
    return all;
  };
}

void read_rank_files_across(ProcessGroup& group, const std::vector<trace::TraceDirEntry>& files,
                            int64_t world_size, const LoadOptions& options, Progress& progress,
                            const std::function<void(RankFile&&)>& join) {
  const auto [first, last] = slice(files.size(), group.rank(), group.size());
  ByteWriter w;
  for (size_t i = first; i < last; ++i) {
    progress.update("reading metadata", i - first + 1, last - first);
    put_rank_file(w, read_rank_file(files[i], world_size, options));
  }
  progress.finish();
  group.all_gather(w.take(), [&](std::string_view part) {
    for (ByteReader r(part); !r.done();) join(get_rank_file(r));
  });
}

}  // namespace ringside::analysis
