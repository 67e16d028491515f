#include "match/comm_roles.h"

#include <algorithm>
#include <map>
#include <set>

namespace ringside::analysis {
namespace {

bool consecutive(const std::vector<int64_t>& sorted) {
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i] != sorted[i - 1] + 1) return false;
  }
  return !sorted.empty();
}

std::vector<int64_t> known_sorted(const std::vector<int64_t>& members) {
  std::vector<int64_t> out;
  for (int64_t m : members)
    if (m >= 0) out.push_back(m);
  std::sort(out.begin(), out.end());
  return out;
}

bool disjoint(const CommInfo& a, const CommInfo& b) {
  for (int64_t m : a.members) {
    if (std::find(b.members.begin(), b.members.end(), m) != b.members.end()) return false;
  }
  return true;
}

std::string role_of(const TraceSet& set, const CommInfo& c, const CommGroups& g) {
  if (c.nranks == set.world_size && c.nranks > 0) return "world";
  if (g.collective_ops == 0 && g.p2p_ops == 0) return "";
  if (g.collective_ops == 0) return "pp";
  const std::vector<int64_t> known = known_sorted(c.members);
  const bool complete = static_cast<int>(known.size()) == c.nranks;
  if (complete && c.intra_node && consecutive(known)) return "tp";
  return "dp";
}

}  // namespace

std::string member_list(const std::vector<int64_t>& members) {
  constexpr size_t kShown = 8;
  std::vector<int64_t> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  const bool unknown = !sorted.empty() && sorted.front() < 0;
  if (!unknown && consecutive(sorted) && sorted.size() > 1) {
    return sorted.size() == 2
               ? "[" + std::to_string(sorted[0]) + "," + std::to_string(sorted[1]) + "]"
               : "[" + std::to_string(sorted.front()) + "-" + std::to_string(sorted.back()) + "]";
  }
  std::string s = "{";
  size_t shown = 0;
  for (int64_t m : sorted) {
    if (m < 0) continue;
    if (shown == kShown) {
      s += ",...";
      break;
    }
    s += (shown++ ? "," : "") + std::to_string(m);
  }
  if (unknown) s += shown ? ",?" : "?";
  s += "}";
  if (sorted.size() > kShown) s += " (" + std::to_string(sorted.size()) + " ranks)";
  return s;
}

void infer_comm_roles(TraceSet& set, const GroupTable& table) {
  for (CommInfo& c : set.comms) {
    c.role = role_of(set, c, table.comms()[static_cast<size_t>(c.index)]);
    if (c.role == "world") {
      c.label = "world";
      continue;
    }
    std::string label = (c.role.empty() ? std::string("comm") : c.role) + member_list(c.members);
    if (c.intra_node && c.nodes.size() == 1 && c.nranks > 1)
      label += " on " + set.nodes[static_cast<size_t>(c.nodes.front())];
    c.label = label;
  }
  // Two communicators with the same members and role (a second DP group for
  // another bucket stream, say) keep apart by their ids.
  std::map<std::string, int> uses;
  for (const CommInfo& c : set.comms) ++uses[c.label];
  for (CommInfo& c : set.comms) {
    if (uses[c.label] > 1) c.label += " (" + c.id_hex() + ")";
  }
}

std::vector<CommFamily> comm_families(const TraceSet& set) {
  std::vector<CommFamily> families;
  std::set<std::vector<int64_t>> seen;
  for (const auto& c : set.comms) {
    if (c.role.empty() || c.role == "world" || c.nranks < 2) continue;
    if (std::find(c.members.begin(), c.members.end(), -1) != c.members.end()) continue;
    if (!seen.insert(c.members).second) continue;
    CommFamily* home = nullptr;
    for (auto& f : families) {
      if (f.role != c.role || f.comms.front()->nranks != c.nranks) continue;
      if (std::all_of(f.comms.begin(), f.comms.end(),
                      [&](const CommInfo* o) { return disjoint(*o, c); })) {
        home = &f;
        break;
      }
    }
    if (home == nullptr) {
      families.emplace_back();
      home = &families.back();
      home->role = c.role;
    }
    home->comms.push_back(&c);
  }
  return families;
}

}  // namespace ringside::analysis
