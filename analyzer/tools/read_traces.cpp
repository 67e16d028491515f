// ringside_read_traces DIR: reads every dataset of every rank file through the
// trace library, one file at a time, and does nothing with the records.  The
// perf script's baseline for "merely reading the datasets" that
// `ringside analyze` is compared against.
#include <chrono>
#include <cstdio>
#include <malloc.h>

#include "ringside/trace_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ringside_read_traces TRACE_DIR\n");
    return 2;
  }
  // Same allocator settings as `ringside` so the comparison is fair.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  const auto start = std::chrono::steady_clock::now();
  auto listing = ringside::trace::list_trace_dir(argv[1]);
  if (!listing.ok()) {
    std::fprintf(stderr, "ringside_read_traces: %s\n", listing.message().c_str());
    return 2;
  }
  uint64_t records = 0, checksum = 0;
  for (const auto& f : listing->files) {
    auto r = ringside::trace::TraceReader::open(f.path);
    if (!r.ok()) continue;
    const auto& reader = *r.value();
    auto st = reader.for_each_op_batch(8192, [&](std::span<const ringside::trace::OpRecord> ops) {
      records += ops.size();
      for (const auto& op : ops) checksum += static_cast<uint64_t>(op.t_dev_end_ns);
      return true;
    });
    if (!st.ok()) std::fprintf(stderr, "ringside_read_traces: %s\n", st.message().c_str());
    if (auto s = reader.samples(); s.ok()) records += s->size();
    if (auto e = reader.events(); e.ok()) records += e->size();
    if (auto c = reader.comms(); c.ok()) records += c->size();
    if (auto s = reader.stats(); s.ok()) records += s->size();
    if (auto p = reader.last_pending(); p.ok()) records += p->size();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"files\": %zu, \"records\": %llu, \"seconds\": %.3f, \"checksum\": %llu}\n",
              listing->files.size(), static_cast<unsigned long long>(records), secs,
              static_cast<unsigned long long>(checksum % 1000));
  return 0;
}
