#include "load/trace_set.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "parallel/load_exchange.h"
#include "ringside/trace_reader.h"
#include "ringside/trace_validate.h"

namespace ringside::analysis {
namespace {

std::string hex_id(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
}

}  // namespace

std::string CommInfo::id_hex() const {
  return hex_id(id);
}

int TraceSet::comm_rank_of(const CommInfo& c, int64_t global_rank) const {
  for (size_t i = 0; i < c.members.size(); ++i) {
    if (c.members[i] == global_rank) return static_cast<int>(i);
  }
  return -1;
}

void count_comm_members(TraceSet& set) {
  for (auto& ci : set.comms) {
    ci.present = 0;
    ci.nodes.clear();
    for (int64_t g : ci.members) {
      if (g < 0 || g >= static_cast<int64_t>(set.ranks.size()) ||
          !set.ranks[static_cast<size_t>(g)].has_file)
        continue;
      ++ci.present;
      int node = set.ranks[static_cast<size_t>(g)].node_index;
      if (std::find(ci.nodes.begin(), ci.nodes.end(), node) == ci.nodes.end())
        ci.nodes.push_back(node);
    }
    std::sort(ci.nodes.begin(), ci.nodes.end());
    ci.intra_node = ci.nodes.size() <= 1;
  }
}

bool exclude_unreadable_ranks(TraceSet& set) {
  bool any = false;
  for (auto& ri : set.ranks) {
    if (!ri.has_file || ri.read_error.empty()) continue;
    ri.has_file = false;
    set.bad_ranks.push_back({ri.rank, ri.read_error});
    any = true;
  }
  if (any) count_comm_members(set);
  return any;
}

bool RankInfo::made_comm_in_searched(int64_t from, int64_t to) const {
  // In trace-local time, where the creations are kept.
  const int64_t local = shift_ns - offset_ns;
  const auto it = std::upper_bound(comms_created.begin(), comms_created.end(), from - local);
  return it != comms_created.end() && *it <= to - local;
}

Result<TraceSet> load_trace_set(const std::string& dir, const LoadOptions& options,
                                Progress& progress) {
  auto listing = trace::list_trace_dir(
      dir, options.step, options.dir_cache,
      options.group != nullptr ? check_files_across(*options.group) : trace::CheckTraceFiles{});
  if (!listing.ok()) return listing.status();
  if (options.reader_cache != nullptr) {
    std::vector<std::string> listed;
    listed.reserve(listing->files.size());
    for (const auto& f : listing->files) listed.push_back(f.path);
    options.reader_cache->retain(listed);
  }
  TraceSet set;
  set.dir = dir;
  set.job_id = listing->job_id;
  set.step_id = listing->step_id;
  set.world_size = listing->world_size;
  for (const auto& bad : listing->bad_files) {
    set.warnings.push_back(bad + " (skipped; its rank is analyzed as missing)");
  }
  for (const auto& f : listing->files) {
    set.world_size = std::max(set.world_size, f.rank + 1);
  }
  set.ranks.resize(static_cast<size_t>(set.world_size));
  for (int64_t r = 0; r < set.world_size; ++r) set.ranks[static_cast<size_t>(r)].rank = r;

  std::map<uint64_t, CommInfo> comms;
  std::map<uint64_t, int64_t> first_claimant;  // comm id -> first rank whose file named it
  struct Conflict {
    int64_t a, b;
    std::string what;
  };
  std::vector<Conflict> conflicts;
  std::map<std::string, int> node_index;
  int64_t base = std::numeric_limits<int64_t>::max();
  std::vector<WindowFirsts> firsts(set.ranks.size());
  // One file's reading joined into the set, in rank order.
  auto join = [&](RankFile&& f) {
    RankInfo& ri = set.ranks[static_cast<size_t>(f.rank)];
    if (!f.open_error.empty()) {
      set.warnings.push_back(f.open_error + " (skipped; its rank is analyzed as missing)");
      return;
    }
    if (!f.comms_error.empty()) {
      set.warnings.push_back(f.path + ": " + f.comms_error +
                             " (corrupt file; skipped, its rank is analyzed as missing)");
      set.bad_ranks.push_back({f.rank, f.comms_error});
      return;
    }
    ri.has_file = true;
    ri.path = std::move(f.path);
    ri.node = std::move(f.node);
    ri.local_rank = f.local_rank;
    ri.gpu_device = f.gpu_device;
    ri.gpu_name = std::move(f.gpu_name);
    ri.gpu_uuid = std::move(f.gpu_uuid);
    ri.gpu_pci_bus_id = std::move(f.gpu_pci_bus_id);
    ri.pid = f.pid;
    ri.producer = std::move(f.producer);
    ri.simulated = f.simulated;
    set.simulated = set.simulated || ri.simulated;
    ri.shift_ns = f.clock_realtime_ns;  // made relative to the job's base below
    ri.clock_monotonic_ns = f.clock_monotonic_ns;
    base = std::min(base, f.clock_realtime_ns);
    auto [it, inserted] = node_index.emplace(ri.node, static_cast<int>(set.nodes.size()));
    if (inserted) {
      set.nodes.push_back(ri.node);
      set.node_ranks.emplace_back();
    }
    ri.node_index = it->second;
    set.node_ranks[static_cast<size_t>(ri.node_index)].push_back(ri.rank);
    ri.op_count = f.op_count;
    ri.first_row = f.first_row;
    for (const auto& rec : f.comms) {
      if (rec.t_ns != trace::kUnknownTime && trace::plausible_time(rec.t_ns))
        ri.comms_created.push_back(rec.t_ns);
      CommInfo& ci = comms[rec.comm_id];
      // Files that disagree about a communicator cannot both be right, and
      // which one is wrong cannot be told: neither is used.
      auto [first, new_comm] = first_claimant.emplace(rec.comm_id, ri.rank);
      if (!new_comm && ci.nranks != rec.nranks) {
        conflicts.push_back({first->second, ri.rank,
                             "disagree on the size of comm " + hex_id(rec.comm_id) + " (" +
                                 std::to_string(ci.nranks) + " and " + std::to_string(rec.nranks) +
                                 " ranks)"});
      }
      if (rec.rank >= 0 && static_cast<size_t>(rec.rank) < ci.members.size() &&
          ci.members[static_cast<size_t>(rec.rank)] >= 0 &&
          ci.members[static_cast<size_t>(rec.rank)] != ri.rank) {
        conflicts.push_back(
            {ci.members[static_cast<size_t>(rec.rank)], ri.rank,
             "both claim rank " + std::to_string(rec.rank) + " of comm " + hex_id(rec.comm_id)});
      }
      ci.id = rec.comm_id;
      ci.nranks = std::max(ci.nranks, rec.nranks);
      ci.parent = rec.parent_id;
      ci.color = rec.color;
      ci.ordinal = rec.ordinal;
      ci.origin = rec.origin;
      if (rec.rank >= 0 && rec.rank < 1 << 24) {
        if (ci.members.size() <= static_cast<size_t>(rec.rank)) {
          ci.members.resize(static_cast<size_t>(rec.rank) + 1, -1);
        }
        ci.members[static_cast<size_t>(rec.rank)] = ri.rank;
      }
    }
    std::sort(ri.comms_created.begin(), ri.comms_created.end());
    for (std::string& e : f.errors) {
      ri.read_error = e;
      set.warnings.push_back(e + " (rank " + std::to_string(ri.rank) +
                             ": not used, analyzed as missing)");
    }
    ri.events = std::move(f.events);
    ri.shutdown = f.shutdown;
    ri.last_signal = f.last_signal;
    ri.last_flush_local = f.last_flush_local;
    ri.run_delay = std::move(f.run_delay);
    ri.ops_dropped = f.ops_dropped;
    ri.probe_cpu_ns = f.probe_cpu_ns;
    ri.pending = std::move(f.pending);
    ri.gpu = std::move(f.gpu);
    ri.links = std::move(f.links);
    ri.clock_samples = std::move(f.clock_samples);
    firsts[static_cast<size_t>(f.rank)] = std::move(f.firsts);
  };
  if (options.group != nullptr) {
    read_rank_files_across(*options.group, listing->files, set.world_size, options, progress, join);
  } else {
    size_t done = 0;
    for (const auto& entry : listing->files) {
      progress.update("reading metadata", ++done, listing->files.size());
      join(read_rank_file(entry, set.world_size, options));
    }
  }
  progress.finish();
  for (const auto& c : conflicts) {
    const std::string why = "ranks " + std::to_string(c.a) + " and " + std::to_string(c.b) + " " +
                            c.what + " (corrupt comm table)";
    for (int64_t r : {c.a, c.b}) {
      RankInfo& ri = set.ranks[static_cast<size_t>(r)];
      if (!ri.has_file || !ri.read_error.empty()) continue;
      ri.read_error = ri.path + ": " + why;
      set.warnings.push_back(ri.read_error + " (rank " + std::to_string(r) +
                             ": not used, analyzed as missing)");
    }
  }
  if (base == std::numeric_limits<int64_t>::max()) {
    return Status::error(dir + ": no trace file could be opened");
  }
  set.base_realtime_ns = base;
  for (auto& ri : set.ranks) {
    if (ri.has_file) ri.shift_ns -= base;
  }

  for (auto& [id, ci] : comms) {
    ci.index = static_cast<int>(set.comms.size());
    if (static_cast<int>(ci.members.size()) < ci.nranks)
      ci.members.resize(static_cast<size_t>(ci.nranks), -1);
    set.comm_index[id] = ci.index;
    set.comms.push_back(ci);
  }
  count_comm_members(set);
  // Ranks with no file: place them in comms where their comm rank equals the
  // global rank of a world-sized communicator (what every launcher does).
  for (auto& ci : set.comms) {
    if (ci.nranks == set.world_size && ci.parent == 0) {
      for (size_t i = 0; i < ci.members.size(); ++i) {
        // Only for ranks without a file: one with a file says where it is.
        if (ci.members[i] < 0 && i < set.ranks.size() && !set.ranks[i].has_file)
          ci.members[i] = static_cast<int64_t>(i);
      }
      ci.label = "world";
    }
  }
  for (auto& ci : set.comms) {
    if (!ci.label.empty()) continue;
    char buf[96];
    if (ci.color >= 0) {
      std::snprintf(buf, sizeof buf, "split %s (%d ranks, color %d)", ci.id_hex().c_str(),
                    ci.nranks, ci.color);
    } else {
      std::snprintf(buf, sizeof buf, "comm %s (%d ranks)", ci.id_hex().c_str(), ci.nranks);
    }
    ci.label = buf;
  }
  build_op_window(set, options.window_ops, firsts, options.window_cache, options.reader_cache);
  return set;
}

}  // namespace ringside::analysis
