#include "match/sibling_lateness.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "match/comm_roles.h"

namespace ringside::analysis {
namespace {

// The group of `comm` at `seq` when it can be compared: every member in, done, with a
// reading, calling the same thing.
const GroupAgg* comparable(const GroupTable& table, const CommInfo& c, uint64_t seq) {
  if (c.present != c.nranks) return nullptr;
  const GroupAgg* g = table.group(c.index, seq);
  if (g == nullptr || !g->complete(c.present) || g->mismatch || !g->has_signature ||
      g->gaps < c.present || g->since_held) {
    return nullptr;
  }
  return g;
}

using Signature = std::tuple<uint8_t, uint64_t, uint8_t>;
Signature signature(const GroupAgg& g) {
  return {g.op, g.count, g.dtype};
}

// One sibling's group at one seq: its own compute per reading, the smallest of its
// members' (GapStats::min).
struct Sibling {
  int comm;
  const GroupAgg* g;
  ComputeReadings own;
};

// The siblings of `fam` compared at `seq`, into `at`: those that can be compared and
// make the most common call.  False when fewer than two.
bool compared_at(const GroupTable& table, const CommFamily& fam, uint64_t seq,
                 std::vector<Sibling>& at, std::vector<std::pair<Signature, int>>& calls) {
  at.clear();
  calls.clear();
  for (const CommInfo* c : fam.comms) {
    const GroupAgg* g = comparable(table, *c, seq);
    if (g == nullptr) continue;
    Sibling& sib = at.emplace_back(Sibling{c->index, g, {}});
    const CommGroups& cg = table.comms()[static_cast<size_t>(c->index)];
    for (int k = 0; k < kReadings; ++k) sib.own[static_cast<size_t>(k)] = cg.reading(*g, k).min;
    auto it = std::find_if(calls.begin(), calls.end(),
                           [&](const auto& s) { return s.first == signature(*g); });
    if (it == calls.end()) {
      calls.emplace_back(signature(*g), 1);
    } else {
      ++it->second;
    }
  }
  if (at.size() < 2) return false;
  const Signature common =
      std::max_element(calls.begin(), calls.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  std::erase_if(at, [&](const Sibling& x) { return signature(*x.g) != common; });
  return at.size() >= 2;
}

// The families of `set` split by pipeline stage: siblings in different stages do
// different work around the same collective (one computes before it, another waits in a
// send/recv before it), so only siblings of one stage are compared.  A rank's stage is
// its position in the pipeline communicators (those where only send/recv ran); the
// communicators whose members are not all in one known stage form one group.
std::vector<CommFamily> stage_families(const TraceSet& set) {
  std::vector<int> rank_stage(set.ranks.size(), -1);
  std::vector<bool> conflict(set.ranks.size(), false);
  for (const CommInfo& c : set.comms) {
    if (c.role != "pp") continue;
    for (size_t pos = 0; pos < c.members.size(); ++pos) {
      const int64_t m = c.members[pos];
      if (m < 0 || static_cast<size_t>(m) >= rank_stage.size()) continue;
      int& s = rank_stage[static_cast<size_t>(m)];
      if (s >= 0 && s != static_cast<int>(pos)) conflict[static_cast<size_t>(m)] = true;
      s = static_cast<int>(pos);
    }
  }
  auto stage_of = [&](const CommInfo& c) {
    int s = -2;
    for (int64_t m : c.members) {
      const int ms =
          m < 0 || static_cast<size_t>(m) >= rank_stage.size() || conflict[static_cast<size_t>(m)]
              ? -1
              : rank_stage[static_cast<size_t>(m)];
      s = s == -2 || s == ms ? ms : -1;
    }
    return s < 0 ? -1 : s;
  };
  std::vector<CommFamily> out;
  for (const CommFamily& fam : comm_families(set)) {
    std::vector<std::pair<int, CommFamily>> by_stage;
    for (const CommInfo* c : fam.comms) {
      const int s = stage_of(*c);
      auto it = std::find_if(by_stage.begin(), by_stage.end(),
                             [&](const auto& x) { return x.first == s; });
      if (it == by_stage.end()) {
        by_stage.emplace_back(s, CommFamily{{}, fam.role});
        it = std::prev(by_stage.end());
      }
      it->second.comms.push_back(c);
    }
    for (auto& [s, f] : by_stage) out.push_back(std::move(f));
  }
  return out;
}

// Whether every sibling's readings agree (within `margin` of the primary one): nothing
// on another stream in the gap that may or may not have held the ranks up.
bool readings_agree(const std::vector<Sibling>& at, double margin) {
  for (const Sibling& s : at) {
    const auto [lo, hi] = std::minmax_element(s.own.begin(), s.own.end());
    if (static_cast<double>(*hi - *lo) > margin * static_cast<double>(s.own[0])) return false;
  }
  return true;
}

}  // namespace

SiblingLateness::SiblingLateness(const TraceSet& set, const GroupTable& table, double late_margin)
    : by_comm_(set.comms.size()), family_(set.comms.size(), -1), rank_comms_(set.ranks.size()) {
  for (const CommFamily& fam : stage_families(set)) {
    if (fam.comms.size() < 2) continue;
    const double members = static_cast<double>(fam.comms.front()->nranks);
    Family out;
    uint64_t seqs = 0, first = UINT64_MAX;
    for (const CommInfo* c : fam.comms) {
      out.comms.push_back(c->index);
      const CommGroups& cg = table.comms()[static_cast<size_t>(c->index)];
      seqs = std::max(seqs, cg.end_seq());
      if (!cg.groups.empty()) first = std::min(first, cg.first_seq);
    }
    std::vector<Sibling> at;
    std::vector<std::pair<Signature, int>> calls;
    // Each communicator's lasting offset from the mean of the siblings it met, by comm index.
    std::vector<std::pair<double, uint64_t>> offset(set.comms.size(), {0.0, 0});
    uint64_t compared = 0, clean_ops = 0;
    // The siblings of the ops whose readings agree, (comm index, own reading 0) each, op
    // after op: what the spread below is measured over, kept rather than looked up again.
    std::vector<std::pair<int, int64_t>> clean_siblings;
    std::vector<size_t> clean_end;  // where each such op's siblings end
    for (uint64_t seq = first; seq < seqs; ++seq) {
      if (!compared_at(table, fam, seq, at, calls)) continue;
      ++compared;
      const bool clean = readings_agree(at, late_margin);
      clean_ops += clean;
      if (clean) {
        for (const Sibling& s : at) clean_siblings.emplace_back(s.comm, s.own[0]);
        clean_end.push_back(clean_siblings.size());
      }
      const double n = static_cast<double>(at.size());
      ComputeReadings sum{};
      for (const Sibling& s : at) {
        for (int k = 0; k < kReadings; ++k) sum[k] += s.own[k];
      }
      size_t slowest = 0;
      int64_t top = INT64_MIN, second = INT64_MIN;
      for (size_t i = 0; i < at.size(); ++i) {
        const int64_t v = at[i].own[0];
        if (v > top) {
          second = top;
          top = v;
          slowest = i;
        } else if (v > second) {
          second = v;
        }
      }
      for (size_t i = 0; i < at.size(); ++i) {
        const int ci = at[i].comm;
        const ComputeReadings& gap = at[i].own;
        double excess = 0;
        bool late = true, not_late = true;
        for (int k = 0; k < kReadings; ++k) {
          const double own = static_cast<double>(gap[k]);
          const double others = (static_cast<double>(sum[k]) - own) / (n - 1);
          const double e = own - others;
          excess = k == 0 ? e : std::min(excess, e);
          late = late && e > late_margin * others;
          not_late = not_late && e <= late_margin * others;
        }
        const double own = static_cast<double>(gap[0]);
        const double others = (static_cast<double>(sum[0]) - own) / (n - 1);
        Lateness& l = by_comm_[static_cast<size_t>(ci)];
        ++l.groups;
        l.gap_sum += own;
        l.excess_sum += excess;
        l.excess_sq_sum += excess * excess;
        if (excess > 0) ++l.excess_positive;
        // Readings that disagree (ops on other streams in the gap, held or alongside:
        // siblings in other pipeline stages wait in different send/recv) say neither.
        if (std::max(own, others) >= kMinInformativeGapNs && (late || not_late)) {
          if (late) {
            ++l.above;
            l.late_excess_ns += excess;
          } else {
            ++l.below;
          }
        }
        if (i == slowest) {
          ++l.last;
          l.cost_ns += std::clamp(excess, 0.0, static_cast<double>(top - second));
        }
        if (clean) {
          auto& [off, count] = offset[static_cast<size_t>(ci)];
          off += own - static_cast<double>(sum[0]) / n;
          ++count;
        }
      }
    }
    // The spread that varies from op to op: each communicator's value less its lasting
    // offset (a lasting difference, a heavier replica, is structure, not data that
    // varies), over the ops whose readings agree (they measure compute alone: around the
    // others, a slow link or an op on another stream changes what the gap holds, by op).
    std::vector<double> cvs, sds, v;
    size_t begin = 0;
    for (const size_t end : clean_end) {
      v.clear();
      for (size_t j = begin; j < end; ++j) {
        const auto& [comm, own] = clean_siblings[j];
        const auto& [off, count] = offset[static_cast<size_t>(comm)];
        v.push_back(static_cast<double>(own) - off / static_cast<double>(count));
      }
      begin = end;
      const double n = static_cast<double>(v.size());
      double mean = 0, top = v.front();
      for (double x : v) {
        mean += x / n;
        top = std::max(top, x);
      }
      double sq = 0;
      for (double x : v) {
        sq += (x - mean) * (x - mean);
        out.spread_wait_ns += members * (top - x);
      }
      if (mean > 0) {
        const double sd = std::sqrt(sq / (n - 1));
        cvs.push_back(sd / mean);
        sds.push_back(sd);
      }
    }
    // The ops left out are taken to vary as much as those measured.
    if (clean_ops > 0)
      out.spread_wait_ns *= static_cast<double>(compared) / static_cast<double>(clean_ops);
    if (cvs.empty()) continue;
    out.compared = compared;
    out.members = static_cast<int>(members);
    out.median_cv = median_of(cvs);
    out.median_sd_ns = median_of(sds);
    const int index = static_cast<int>(families_.size());
    for (const CommInfo* c : fam.comms) {
      if (by_comm_[static_cast<size_t>(c->index)].groups == 0) continue;
      family_[static_cast<size_t>(c->index)] = index;
      for (int64_t m : c->members) {
        if (m >= 0 && static_cast<size_t>(m) < rank_comms_.size())
          rank_comms_[static_cast<size_t>(m)].push_back(c->index);
      }
    }
    families_.push_back(std::move(out));
  }
}

const Lateness* SiblingLateness::of(int comm) const {
  if (comm < 0 || static_cast<size_t>(comm) >= by_comm_.size()) return nullptr;
  const Lateness& l = by_comm_[static_cast<size_t>(comm)];
  return l.groups > 0 ? &l : nullptr;
}

const std::vector<int>& SiblingLateness::comms_of(int64_t rank) const {
  static const std::vector<int> kNone;
  if (rank < 0 || static_cast<size_t>(rank) >= rank_comms_.size()) return kNone;
  return rank_comms_[static_cast<size_t>(rank)];
}

int SiblingLateness::family_of(int comm) const {
  if (comm < 0 || static_cast<size_t>(comm) >= family_.size()) return -1;
  return family_[static_cast<size_t>(comm)];
}

}  // namespace ringside::analysis
