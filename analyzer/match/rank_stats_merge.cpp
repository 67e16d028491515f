// RankStatsPass's partial states of a parallel analysis (parallel/process_group.h):
// every rank is measured whole by one process, so its figures move as they are; the
// mismatched calls are listed in rank order, as one pass lists them.
#include "match/rank_stats.h"

namespace ringside::analysis {

void RankStatsPass::save_partial(ByteWriter& w, std::span<const int64_t> ranks) const {
  w.put<uint64_t>(records_);
  w.put<uint64_t>(ranks.size());
  for (int64_t r : ranks) {
    const RankLateness& rl = ranks_.at(static_cast<size_t>(r));
    w.put<int64_t>(r);
    w.put(rl.total);
    w.put<double>(rl.compute_ns);
    w.put<double>(rl.inside_ns);
    w.put<double>(rl.compute_held_ns);
    w.put_vector(rl.per_comm);
    w.put_vector(rl.arrival_late_ms);
    w.put<uint64_t>(rl.arrivals_seen);
  }
  for (const MismatchDetail& md : mismatch_details_) w.put_vector(md.calls);
}

void RankStatsPass::merge_partial(ByteReader& r) {
  records_ += r.get<uint64_t>();
  for (auto n = r.get<uint64_t>(); n > 0; --n) {
    RankLateness& rl = ranks_.at(static_cast<size_t>(r.get<int64_t>()));
    rl.total = r.get<Lateness>();
    rl.compute_ns = r.get<double>();
    rl.inside_ns = r.get<double>();
    rl.compute_held_ns = r.get<double>();
    rl.per_comm = r.get_vector<std::pair<int, Lateness>>();
    rl.arrival_late_ms = r.get_vector<float>();
    rl.arrivals_seen = r.get<uint64_t>();
  }
  for (MismatchDetail& md : mismatch_details_) {
    const auto calls = r.get_vector<CallSignature>();
    md.calls.insert(md.calls.end(), calls.begin(), calls.end());
  }
}

}  // namespace ringside::analysis
