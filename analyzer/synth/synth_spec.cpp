#include "synth/synth_spec.h"

#include <map>
#include <set>

#include "ringside/config_spec.h"

namespace ringside::analysis::synth {
namespace {

struct KindInfo {
  const char* name;
  FaultKind kind;
  std::set<std::string> required;
  std::set<std::string> optional;
};

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> table = {
      {"straggler", FaultKind::kStraggler, {"rank", "factor"}, {}},
      {"slow_node", FaultKind::kSlowNode, {"node", "factor"}, {}},
      {"throttle", FaultKind::kThrottle, {"rank"}, {"factor"}},
      {"imbalance", FaultKind::kImbalanceData, {"amount"}, {}},
      {"heavy_sample", FaultKind::kHeavySample, {"factor"}, {"rank", "every"}},
      {"heavy_stage", FaultKind::kHeavyStage, {"stage", "factor"}, {}},
      {"heavy_replica", FaultKind::kHeavyReplica, {"replica", "factor"}, {}},
      {"slow_nic", FaultKind::kSlowNic, {"node", "factor"}, {}},
      {"slow_pair", FaultKind::kSlowPair, {"a", "b", "factor"}, {}},
      {"slow_p2p", FaultKind::kSlowP2p, {"rank", "peer", "factor"}, {}},
      {"stop", FaultKind::kStop, {"rank", "op"}, {}},
      {"all_stuck", FaultKind::kAllStuck, {"op"}, {}},
      {"stall", FaultKind::kStall, {"rank", "op"}, {}},
      {"desync", FaultKind::kDesync, {"rank", "op"}, {}},
      {"crash", FaultKind::kCrash, {"rank", "op"}, {}},
      {"missing", FaultKind::kMissing, {"rank"}, {}},
      {"xid", FaultKind::kXid, {"rank"}, {"code", "step"}},
      {"ecc", FaultKind::kEcc, {"rank"}, {"step"}},
  };
  return table;
}

std::string kind_list() {
  std::string out;
  for (const auto& k : kinds()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace

const char* fault_kind_name(FaultKind kind) {
  for (const auto& k : kinds()) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::string node_name(int node_index) {
  return "node" + std::to_string(node_index + 1);
}

Result<Fault> parse_fault(std::string_view text) {
  const std::string whole(text);
  auto colon = text.find(':');
  std::string name(text.substr(0, colon));
  const KindInfo* info = nullptr;
  for (const auto& k : kinds()) {
    if (name == k.name) info = &k;
  }
  if (info == nullptr) {
    return Status::error("--fault '" + whole + "': unknown fault kind '" + name +
                         "'; use one of: " + kind_list());
  }
  std::map<std::string, std::string> kv;
  if (colon != std::string_view::npos) {
    std::string_view rest = text.substr(colon + 1);
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      auto eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return Status::error("--fault '" + whole + "': '" + std::string(item) +
                             "' is not key=value");
      }
      kv[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  for (const auto& key : info->required) {
    if (!kv.count(key)) {
      return Status::error("--fault '" + whole + "': missing '" + key + "=' (" + name + " needs " +
                           [&] {
                             std::string s;
                             for (const auto& k : info->required) s += (s.empty() ? "" : ", ") + k;
                             return s;
                           }() +
                           ")");
    }
  }
  Fault f;
  f.kind = info->kind;
  for (const auto& [key, value] : kv) {
    if (!info->required.count(key) && !info->optional.count(key)) {
      return Status::error("--fault '" + whole + "': unknown key '" + key + "' for " + name);
    }
    auto bad = [&](const std::string& why) {
      return Status::error("--fault '" + whole + "': " + key + "='" + value + "' " + why);
    };
    if (key == "rank" || key == "peer" || key == "op" || key == "stage" || key == "replica" ||
        key == "code" || key == "step" || key == "every") {
      auto v = config::parse_int(value);
      if (!v.ok() || v.value() < 0) return bad("must be a non-negative integer");
      if (key == "rank") f.rank = static_cast<int>(v.value());
      if (key == "peer") f.peer = static_cast<int>(v.value());
      if (key == "op") f.op = v.value();
      if (key == "stage") f.stage = static_cast<int>(v.value());
      if (key == "replica") f.replica = static_cast<int>(v.value());
      if (key == "code") f.code = v.value();
      if (key == "step") f.step = v.value();
      if (key == "every") {
        if (v.value() < 1) return bad("must be at least 1");
        f.every = v.value();
      }
    } else if (key == "factor" || key == "amount") {
      auto v = config::parse_double(value);
      if (!v.ok()) return bad("must be a number");
      if (key == "factor") {
        if (v.value() < 1) return bad("must be >= 1 (a slowdown factor)");
        f.factor = v.value();
      } else {
        if (v.value() <= 0 || v.value() > 10) return bad("must be in (0, 10]");
        f.amount = v.value();
      }
    } else if (key == "node" || key == "a") {
      f.node = value;
    } else if (key == "b") {
      f.node_b = value;
    }
  }
  if (f.kind == FaultKind::kThrottle && !kv.count("factor")) f.factor = 1.3;
  return f;
}

Status validate(const SynthSpec& s) {
  auto err = [](const std::string& m) { return Status::error(m); };
  if (s.out_dir.empty()) return err("-o/--out is required: the directory to write traces into");
  if (s.ranks < 1) return err("--ranks must be >= 1");
  if (s.nodes < 1 || s.ranks % s.nodes != 0) {
    return err("--nodes " + std::to_string(s.nodes) + " must divide --ranks " +
               std::to_string(s.ranks) + " (equal ranks per node)");
  }
  if (s.tp < 1 || s.pp < 1 || s.ranks % (s.tp * s.pp) != 0) {
    return err("--tp x --pp (" + std::to_string(s.tp) + " x " + std::to_string(s.pp) +
               ") must divide --ranks " + std::to_string(s.ranks));
  }
  if (s.steps < 1) return err("--steps must be >= 1");
  if (s.grow_steps < 0 || s.grow_steps >= s.steps) {
    return err("--grow-steps " + std::to_string(s.grow_steps) + " must be below --steps " +
               std::to_string(s.steps) + " (the steps before them are written at once)");
  }
  if (s.grow_every_s <= 0 || s.grow_every_s > 3600)
    return err("--grow-every must be in (0, 3600] seconds");
  if (s.compute_ms <= 0) return err("--compute-ms must be > 0");
  if (s.jitter < 0 || s.jitter > 0.5) return err("--jitter must be in [0, 0.5]");
  if (s.hiccups < 0 || s.hiccups > 0.5) return err("--hiccups must be in [0, 0.5]");
  if (s.host_wait < 0 || s.host_wait > 10) return err("--host-wait must be in [0, 10]");
  if (s.intra_gbps <= 0 || s.inter_gbps <= 0) return err("bandwidths must be > 0");
  std::set<std::string> node_names;
  for (int n = 0; n < s.nodes; ++n) node_names.insert(node_name(n));
  int hang_faults = 0;
  for (const Fault& f : s.faults) {
    std::string what = std::string("--fault ") + fault_kind_name(f.kind) + ": ";
    if (f.rank >= s.ranks) {
      return err(what + "rank " + std::to_string(f.rank) + " is not below --ranks " +
                 std::to_string(s.ranks));
    }
    if (f.peer >= s.ranks || (f.peer >= 0 && f.peer == f.rank)) {
      return err(what + "peer " + std::to_string(f.peer) + " must be another rank, below --ranks " +
                 std::to_string(s.ranks));
    }
    if (f.kind == FaultKind::kSlowNic || f.kind == FaultKind::kSlowPair ||
        f.kind == FaultKind::kSlowNode) {
      for (const std::string& n : {f.node, f.node_b}) {
        if (n.empty() && f.kind != FaultKind::kSlowPair) continue;
        if (!node_names.count(n)) {
          return err(what + "node '" + n + "' is not one of node1..node" + std::to_string(s.nodes));
        }
      }
      if (f.kind == FaultKind::kSlowPair && f.node == f.node_b) {
        return err(what + "a and b must be two different nodes");
      }
    }
    if (f.kind == FaultKind::kHeavyStage && (s.pp < 2 || f.stage >= s.pp)) {
      return err(what + "needs --pp >= 2 and stage below --pp");
    }
    if (f.kind == FaultKind::kHeavyReplica) {
      const int dp = s.ranks / (s.tp * s.pp);
      if (dp < 2 || f.replica >= dp) {
        return err(what + "replica " + std::to_string(f.replica) + " must be below the " +
                   std::to_string(dp) + " data-parallel replicas (ranks / (tp x pp)), and there " +
                   "must be at least 2");
      }
    }
    switch (f.kind) {
      case FaultKind::kStop:
      case FaultKind::kAllStuck:
      case FaultKind::kStall:
      case FaultKind::kDesync:
      case FaultKind::kCrash: {
        ++hang_faults;
        // The world communicator carries the gradient buckets in a plain data-parallel
        // job, else one loss all-reduce per step (synth_model.cpp).
        const int dp = s.ranks / (s.tp * s.pp);
        const int64_t per_step =
            s.tp > 1 || s.pp > 1 || dp <= 1 ? 1 : static_cast<int64_t>(s.buckets.size());
        const int64_t world_ops = per_step * s.steps;
        if (f.op < 0 || f.op >= world_ops) {
          return err(what + "op " + std::to_string(f.op) + " is beyond the " +
                     std::to_string(world_ops) +
                     " ops of the world communicator in this job (ops count from 0)");
        }
        break;
      }
      default:
        break;
    }
  }
  if (hang_faults > 1) return err("at most one of stop/all_stuck/stall/desync/crash per job");
  return {};
}

}  // namespace ringside::analysis::synth
