// Desyncs: members called different things at the same (comm, seq) — another
// collective, datatype, count or root.  The odd ones out are the minority.
#include <algorithm>
#include <map>

#include "detect/context.h"
#include "report/next_command.h"
#include "ringside/bandwidth.h"

namespace ringside::analysis {
namespace {

std::string describe(const CallSignature& s) {
  std::string out = std::string(trace::op_kind_name(static_cast<trace::OpKind>(s.op))) +
                    " count=" + std::to_string(s.count) + " " + nccl_dtype_name(s.dtype);
  if (s.root >= 0) out += " root=" + std::to_string(s.root);
  return out;
}

}  // namespace

void detect_desyncs(const Context& ctx, std::vector<Finding>& out) {
  std::map<int, bool> done;
  for (const auto& md : ctx.stats.mismatches()) {
    if (done[md.comm] || md.calls.empty()) continue;
    done[md.comm] = true;
    std::map<std::tuple<uint8_t, uint8_t, uint64_t, int32_t>, std::vector<int64_t>> by_sig;
    std::map<std::tuple<uint8_t, uint8_t, uint64_t, int32_t>, CallSignature> example;
    for (const auto& c : md.calls) {
      auto key = std::make_tuple(c.op, c.dtype, c.count, c.root);
      by_sig[key].push_back(c.rank);
      example.emplace(key, c);
    }
    if (by_sig.size() < 2) continue;
    auto majority = std::max_element(
        by_sig.begin(), by_sig.end(),
        [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    const CommInfo& comm = ctx.set.comms[static_cast<size_t>(md.comm)];
    Finding f;
    f.kind = "desync";
    f.comm = comm.id;
    f.comm_label = comm.label;
    f.seq = md.seq;
    std::string odd;
    for (const auto& [key, ranks] : by_sig) {
      if (key == majority->first) continue;
      f.ranks.insert(f.ranks.end(), ranks.begin(), ranks.end());
      odd += (odd.empty() ? "" : "; ") + std::string("rank") + (ranks.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < ranks.size() && i < 8; ++i)
        odd += (i ? "," : "") + std::to_string(ranks[i]);
      odd += " called " + describe(example.at(key));
    }
    std::sort(f.ranks.begin(), f.ranks.end());
    f.nodes = ctx.nodes_of(f.ranks);
    f.severity = 1.0;
    f.confidence = 0.95;
    f.evidence = "At op #" + std::to_string(md.seq) + " of " + comm.label + ", " + odd + " while " +
                 std::to_string(majority->second.size()) + " ranks called " +
                 describe(example.at(majority->first)) +
                 ": the ranks disagree on what to run (different code paths or shapes).";
    f.extra["expected"] = describe(example.at(majority->first));
    f.next_command = next_command_for_desync(ctx, f);
    out.push_back(std::move(f));
  }
}

}  // namespace ringside::analysis
