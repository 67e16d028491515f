// Cluster file (JSON) -> Cluster. Strict: unknown keys, wrong types and out-of-range
// values are errors naming the file and the key path (e.g. faults.slow_gpu[1].factor).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cluster.h"
#include "nvml_bits.h"

namespace ringside::sim {

using nlohmann::json;

namespace {

struct ParseError : std::runtime_error {
  ParseError(const std::string& key, const std::string& what)
      : std::runtime_error("key '" + key + "': " + what) {}
};

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void check_keys(const json& obj, const std::string& path,
                std::initializer_list<const char*> allowed) {
  if (!obj.is_object()) throw ParseError(path.empty() ? "(top level)" : path, "expected an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    std::string list;
    for (const char* a : allowed) {
      known = known || it.key() == a;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    if (!known) throw ParseError(join(path, it.key()), "unknown key (allowed here: " + list + ")");
  }
}

double number(const json& v, const std::string& key, double min, double max) {
  if (!v.is_number()) throw ParseError(key, "expected a number, got " + v.dump());
  double d = v.get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    std::ostringstream os;
    os << "value " << v.dump() << " out of range [" << min << ", " << max << "]";
    throw ParseError(key, os.str());
  }
  return d;
}

int64_t integer(const json& v, const std::string& key, int64_t min, int64_t max) {
  if (!v.is_number_integer()) throw ParseError(key, "expected an integer, got " + v.dump());
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max))
    throw ParseError(key, "value " + v.dump() + " too large (max " + std::to_string(max) + ")");
  int64_t i = v.get<int64_t>();
  if (i < min || i > max)
    throw ParseError(key, "value " + v.dump() + " out of range [" + std::to_string(min) + ", " +
                              std::to_string(max) + "]");
  return i;
}

std::string text(const json& v, const std::string& key) {
  if (!v.is_string() || v.get<std::string>().empty())
    throw ParseError(key, "expected a non-empty string, got " + v.dump());
  return v.get<std::string>();
}

bool boolean(const json& v, const std::string& key) {
  if (!v.is_boolean()) throw ParseError(key, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

// A fault key holds one object or a list of objects.
std::vector<std::pair<const json*, std::string>> entries(const json& v, const std::string& key) {
  std::vector<std::pair<const json*, std::string>> out;
  if (v.is_object()) {
    out.emplace_back(&v, key);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      out.emplace_back(&v[i], key + "[" + std::to_string(i) + "]");
  } else {
    throw ParseError(key, "expected an object or a list of objects");
  }
  return out;
}

constexpr double kMaxFactor = 1e6;

}  // namespace

class ClusterParser {
 public:
  explicit ClusterParser(Cluster& c) : c_(c) {}

  void parse(const json& root) {
    check_keys(root, "",
               {"gpus_per_node", "gpu_model", "device_copy_gbps", "nodes", "intra_node",
                "inter_node", "nvml", "faults"});
    if (root.contains("device_copy_gbps"))
      c_.device_copy_gbps_ = number(root["device_copy_gbps"], "device_copy_gbps", 1e-3, 1e6);
    if (root.contains("gpus_per_node"))
      c_.gpus_per_node_ = static_cast<int>(integer(root["gpus_per_node"], "gpus_per_node", 1, 64));
    if (root.contains("gpu_model")) c_.gpu_model_ = text(root["gpu_model"], "gpu_model");
    parse_nodes(root);
    if (root.contains("intra_node"))
      c_.intra_ = parse_link(root["intra_node"], "intra_node", c_.intra_);
    if (root.contains("inter_node"))
      c_.inter_ = parse_link(root["inter_node"], "inter_node", c_.inter_);
    if (root.contains("nvml")) {
      for (auto& [e, key] : entries(root["nvml"], "nvml")) parse_nvml(*e, key);
    }
    if (root.contains("faults")) parse_faults(root["faults"]);
  }

 private:
  void parse_nodes(const json& root) {
    if (!root.contains("nodes")) {
      c_.nodes_.push_back(make_node(kDefaultNodeName, c_.gpus_per_node_, c_.gpu_model_));
      return;
    }
    const json& n = root["nodes"];
    if (n.is_number()) {  // shorthand: node1..nodeK
      int64_t count = integer(n, "nodes", 1, 4096);
      for (int64_t i = 1; i <= count; ++i)
        c_.nodes_.push_back(
            make_node("node" + std::to_string(i), c_.gpus_per_node_, c_.gpu_model_));
      return;
    }
    if (!n.is_array() || n.empty())
      throw ParseError("nodes", "expected a node count or a non-empty list of nodes");
    for (size_t i = 0; i < n.size(); ++i) {
      std::string key = "nodes[" + std::to_string(i) + "]";
      const json& e = n[i];
      std::string name;
      int gpus = c_.gpus_per_node_;
      std::string model = c_.gpu_model_;
      if (e.is_string()) {
        name = text(e, key);
      } else {
        check_keys(e, key, {"name", "gpus", "gpu_model"});
        if (!e.contains("name"))
          throw ParseError(key + ".name", "missing (every node needs a name)");
        name = text(e["name"], key + ".name");
        if (e.contains("gpus")) gpus = static_cast<int>(integer(e["gpus"], key + ".gpus", 1, 64));
        if (e.contains("gpu_model")) model = text(e["gpu_model"], key + ".gpu_model");
      }
      if (c_.node_index(name) >= 0) throw ParseError(key, "duplicate node name '" + name + "'");
      c_.nodes_.push_back(make_node(name, gpus, model));
    }
  }

  static Node make_node(std::string name, int gpus, std::string model) {
    Node node;
    node.name = std::move(name);
    node.gpus = gpus;
    node.gpu_model = std::move(model);
    node.nvml.resize(static_cast<size_t>(gpus));
    return node;
  }

  static Link parse_link(const json& v, const std::string& key, Link link) {
    check_keys(v, key, {"bandwidth_gbps", "latency_us"});
    if (v.contains("bandwidth_gbps"))
      link.bandwidth_gbps = number(v["bandwidth_gbps"], key + ".bandwidth_gbps", 1e-6, 1e6);
    if (v.contains("latency_us"))
      link.latency_us = number(v["latency_us"], key + ".latency_us", 0, 1e7);
    return link;
  }

  int require_node(const json& e, const std::string& key) {
    if (!e.contains("node")) throw ParseError(key + ".node", "missing");
    std::string name = text(e["node"], key + ".node");
    int idx = c_.node_index(name);
    if (idx < 0)
      throw ParseError(key + ".node", "'" + name + "' is not a node of the cluster (see 'nodes')");
    return idx;
  }

  int optional_gpu(const json& e, const std::string& key, int node) {
    if (!e.contains("gpu")) return -1;
    int gpus = c_.nodes_[static_cast<size_t>(node)].gpus;
    return static_cast<int>(integer(e["gpu"], key + ".gpu", 0, gpus - 1));
  }

  void parse_nvml(const json& e, const std::string& key) {
    check_keys(e, key,
               {"node",
                "gpu",
                "thermal_throttle",
                "clock_event_reasons",
                "sm_clock_mhz",
                "max_sm_clock_mhz",
                "mem_clock_mhz",
                "max_mem_clock_mhz",
                "temperature_c",
                "power_w",
                "power_limit_w",
                "utilization_gpu_pct",
                "utilization_memory_pct",
                "memory_total_mib",
                "memory_used_mib",
                "ecc",
                "remapped_rows",
                "pcie_replays",
                "pcie",
                "xid"});
    int node = require_node(e, key);
    int gpu = optional_gpu(e, key, node);
    auto& states = c_.nodes_[static_cast<size_t>(node)].nvml;
    for (size_t g = 0; g < states.size(); ++g) {
      if (gpu < 0 || static_cast<int>(g) == gpu) apply_nvml(e, key, states[g]);
    }
  }

  static unsigned u32(const json& e, const std::string& key, const char* name, unsigned max) {
    return static_cast<unsigned>(integer(e[name], key + "." + name, 0, max));
  }

  static void apply_nvml(const json& e, const std::string& key, GpuNvmlState& s) {
    // thermal_throttle first, so explicit values below override what it implies.
    if (e.contains("thermal_throttle") &&
        boolean(e["thermal_throttle"], key + ".thermal_throttle")) {
      s.clock_event_reasons |= nvmlClocksEventReasonSwThermalSlowdown |
                               nvmlClocksThrottleReasonHwThermalSlowdown |
                               nvmlClocksThrottleReasonHwSlowdown;
      s.sm_clock_mhz = s.max_sm_clock_mhz * 55 / 100;
      s.temperature_c = 92;
    }
    if (e.contains("clock_event_reasons"))
      s.clock_event_reasons = parse_reasons(e["clock_event_reasons"], key + ".clock_event_reasons");
    if (e.contains("max_sm_clock_mhz"))
      s.max_sm_clock_mhz = u32(e, key, "max_sm_clock_mhz", 100000);
    if (e.contains("sm_clock_mhz")) s.sm_clock_mhz = u32(e, key, "sm_clock_mhz", 100000);
    if (e.contains("max_mem_clock_mhz"))
      s.max_mem_clock_mhz = u32(e, key, "max_mem_clock_mhz", 100000);
    if (e.contains("mem_clock_mhz")) s.mem_clock_mhz = u32(e, key, "mem_clock_mhz", 100000);
    if (e.contains("temperature_c")) s.temperature_c = u32(e, key, "temperature_c", 200);
    if (e.contains("power_w"))
      s.power_mw = static_cast<unsigned>(
          std::lround(number(e["power_w"], key + ".power_w", 0, 100000) * 1000));
    if (e.contains("power_limit_w"))
      s.power_limit_mw = static_cast<unsigned>(
          std::lround(number(e["power_limit_w"], key + ".power_limit_w", 0, 100000) * 1000));
    if (e.contains("utilization_gpu_pct")) {
      s.utilization_gpu_pct = u32(e, key, "utilization_gpu_pct", 100);
      s.utilization_gpu_fixed = true;
    }
    if (e.contains("utilization_memory_pct"))
      s.utilization_memory_pct = u32(e, key, "utilization_memory_pct", 100);
    if (e.contains("memory_total_mib"))
      s.memory_total_bytes = static_cast<uint64_t>(integer(e["memory_total_mib"],
                                                           key + ".memory_total_mib", 1, 1 << 30))
                             << 20;
    if (e.contains("memory_used_mib"))
      s.memory_used_bytes =
          static_cast<uint64_t>(integer(e["memory_used_mib"], key + ".memory_used_mib", 0, 1 << 30))
          << 20;
    if (s.sm_clock_mhz > s.max_sm_clock_mhz)
      throw ParseError(key + ".sm_clock_mhz", "exceeds max_sm_clock_mhz");
    if (s.memory_used_bytes > s.memory_total_bytes)
      throw ParseError(key + ".memory_used_mib", "exceeds memory_total_mib");
    if (e.contains("ecc")) {
      const json& v = e["ecc"];
      std::string k = key + ".ecc";
      check_keys(v, k,
                 {"volatile_corrected", "volatile_uncorrected", "aggregate_corrected",
                  "aggregate_uncorrected"});
      constexpr int64_t kMax = int64_t{1} << 52;
      if (v.contains("volatile_corrected"))
        s.ecc_volatile_corrected = static_cast<uint64_t>(
            integer(v["volatile_corrected"], k + ".volatile_corrected", 0, kMax));
      if (v.contains("volatile_uncorrected"))
        s.ecc_volatile_uncorrected = static_cast<uint64_t>(
            integer(v["volatile_uncorrected"], k + ".volatile_uncorrected", 0, kMax));
      if (v.contains("aggregate_corrected"))
        s.ecc_aggregate_corrected = static_cast<uint64_t>(
            integer(v["aggregate_corrected"], k + ".aggregate_corrected", 0, kMax));
      if (v.contains("aggregate_uncorrected"))
        s.ecc_aggregate_uncorrected = static_cast<uint64_t>(
            integer(v["aggregate_uncorrected"], k + ".aggregate_uncorrected", 0, kMax));
      // Aggregate counts include the volatile ones, as on real GPUs.
      s.ecc_aggregate_corrected = std::max(s.ecc_aggregate_corrected, s.ecc_volatile_corrected);
      s.ecc_aggregate_uncorrected =
          std::max(s.ecc_aggregate_uncorrected, s.ecc_volatile_uncorrected);
    }
    if (e.contains("remapped_rows")) {
      const json& v = e["remapped_rows"];
      std::string k = key + ".remapped_rows";
      check_keys(v, k, {"correctable", "uncorrectable", "pending", "failure"});
      if (v.contains("correctable"))
        s.remapped_rows_correctable =
            static_cast<unsigned>(integer(v["correctable"], k + ".correctable", 0, 1 << 20));
      if (v.contains("uncorrectable"))
        s.remapped_rows_uncorrectable =
            static_cast<unsigned>(integer(v["uncorrectable"], k + ".uncorrectable", 0, 1 << 20));
      if (v.contains("pending")) s.remap_pending = boolean(v["pending"], k + ".pending");
      if (v.contains("failure")) s.remap_failure = boolean(v["failure"], k + ".failure");
    }
    if (e.contains("pcie_replays")) s.pcie_replays = u32(e, key, "pcie_replays", 1u << 30);
    if (e.contains("pcie")) {
      const json& v = e["pcie"];
      std::string k = key + ".pcie";
      check_keys(v, k, {"gen", "max_gen", "width", "max_width"});
      if (v.contains("max_gen")) s.pcie_max_gen = u32(v, k, "max_gen", 7);
      if (v.contains("gen")) s.pcie_gen = u32(v, k, "gen", 7);
      if (v.contains("max_width")) s.pcie_max_width = u32(v, k, "max_width", 32);
      if (v.contains("width")) s.pcie_width = u32(v, k, "width", 32);
      if (s.pcie_gen < 1 || s.pcie_gen > s.pcie_max_gen)
        throw ParseError(k + ".gen", "must be in [1, max_gen]");
      if (s.pcie_width < 1 || s.pcie_width > s.pcie_max_width)
        throw ParseError(k + ".width", "must be in [1, max_width]");
    }
    if (e.contains("xid")) {
      for (auto& [x, k] : entries(e["xid"], key + ".xid")) {
        check_keys(*x, k, {"code", "at_seconds"});
        if (!x->contains("code")) throw ParseError(k + ".code", "missing");
        XidEvent ev;
        ev.code = static_cast<uint64_t>(integer((*x)["code"], k + ".code", 1, 1 << 20));
        if (x->contains("at_seconds"))
          ev.at_seconds = number((*x)["at_seconds"], k + ".at_seconds", 0, 1e7);
        s.xids.push_back(ev);
      }
    }
  }

  static uint64_t parse_reasons(const json& v, const std::string& key) {
    if (v.is_number_integer()) return static_cast<uint64_t>(integer(v, key, 0, int64_t{1} << 40));
    if (!v.is_array())
      throw ParseError(key, "expected an integer bit mask or a list of reason names");
    uint64_t bits = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string k = key + "[" + std::to_string(i) + "]";
      std::string name = text(v[i], k);
      uint64_t bit = nvml_reason_bit(name);
      if (bit == 0)
        throw ParseError(k, "unknown reason '" + name + "' (known: " + nvml_reason_names() + ")");
      bits |= bit;
    }
    return bits;
  }

  void parse_faults(const json& f) {
    check_keys(f, "faults",
               {"slow_gpu", "slow_nic", "slow_pair", "stop", "stall", "crash", "freeze"});
    if (f.contains("slow_gpu")) {
      for (auto& [e, key] : entries(f["slow_gpu"], "faults.slow_gpu")) {
        check_keys(*e, key, {"rank", "node", "gpu", "factor"});
        SlowGpu s;
        s.factor = factor(*e, key);
        if (e->contains("rank")) {
          if (e->contains("node") || e->contains("gpu"))
            throw ParseError(key, "give either 'rank' or 'node' + 'gpu', not both");
          s.rank = static_cast<int>(integer((*e)["rank"], key + ".rank", 0, 1 << 24));
        } else {
          int node = require_node(*e, key);
          s.node = c_.nodes_[static_cast<size_t>(node)].name;
          s.gpu = optional_gpu(*e, key, node);
          if (s.gpu < 0) throw ParseError(key + ".gpu", "missing (or use 'rank')");
        }
        c_.slow_gpus_.push_back(s);
      }
    }
    if (f.contains("slow_nic")) {
      for (auto& [e, key] : entries(f["slow_nic"], "faults.slow_nic")) {
        check_keys(*e, key, {"node", "factor"});
        SlowNic s;
        s.factor = factor(*e, key);
        s.node = c_.nodes_[static_cast<size_t>(require_node(*e, key))].name;
        c_.slow_nics_.push_back(s);
      }
    }
    if (f.contains("slow_pair")) {
      for (auto& [e, key] : entries(f["slow_pair"], "faults.slow_pair")) {
        check_keys(*e, key, {"nodes", "node", "gpus", "factor"});
        SlowPair s;
        s.factor = factor(*e, key);
        if (e->contains("node") || e->contains("gpus")) {
          // Two GPUs of one node: their intra-node path.
          if (e->contains("nodes"))
            throw ParseError(key, "give either 'nodes' (two nodes) or 'node' + 'gpus', not both");
          const int node = require_node(*e, key);
          s.a = s.b = c_.nodes_[static_cast<size_t>(node)].name;
          if (!e->contains("gpus") || !(*e)["gpus"].is_array() || (*e)["gpus"].size() != 2)
            throw ParseError(key + ".gpus", "expected a list of two GPU ordinals of '" + s.a + "'");
          const int gpus = c_.nodes_[static_cast<size_t>(node)].gpus;
          for (int i = 0; i < 2; ++i) {
            const int g =
                static_cast<int>(integer((*e)["gpus"][static_cast<size_t>(i)],
                                         key + ".gpus[" + std::to_string(i) + "]", 0, gpus - 1));
            (i == 0 ? s.gpu_a : s.gpu_b) = g;
          }
          if (s.gpu_a == s.gpu_b) throw ParseError(key + ".gpus", "the two GPUs must differ");
          c_.slow_pairs_.push_back(s);
          continue;
        }
        if (!e->contains("nodes") || !(*e)["nodes"].is_array() || (*e)["nodes"].size() != 2)
          throw ParseError(key + ".nodes", "expected a list of two node names");
        for (int i = 0; i < 2; ++i) {
          std::string k = key + ".nodes[" + std::to_string(i) + "]";
          std::string name = text((*e)["nodes"][static_cast<size_t>(i)], k);
          if (c_.node_index(name) < 0)
            throw ParseError(k, "'" + name + "' is not a node of the cluster (see 'nodes')");
          (i == 0 ? s.a : s.b) = name;
        }
        if (s.a == s.b)
          throw ParseError(key + ".nodes", "the two nodes must differ (use slow_nic for one node)");
        c_.slow_pairs_.push_back(s);
      }
    }
    const std::pair<const char*, OpFaultKind> kinds[] = {{"stop", OpFaultKind::kStop},
                                                         {"stall", OpFaultKind::kStall},
                                                         {"crash", OpFaultKind::kCrash},
                                                         {"freeze", OpFaultKind::kFreeze}};
    for (auto [name, kind] : kinds) {
      if (!f.contains(name)) continue;
      for (auto& [e, key] : entries(f[name], std::string("faults.") + name)) {
        check_keys(*e, key, {"rank", "comm", "op"});
        OpFault o;
        o.kind = kind;
        // A freeze hits the op on every rank unless one is named.
        if (!e->contains("rank") && kind != OpFaultKind::kFreeze)
          throw ParseError(key + ".rank", "missing");
        if (!e->contains("op")) throw ParseError(key + ".op", "missing");
        o.rank = e->contains("rank")
                     ? static_cast<int>(integer((*e)["rank"], key + ".rank", 0, 1 << 24))
                     : -1;
        o.op = integer((*e)["op"], key + ".op", 0, int64_t{1} << 50);
        if (e->contains("comm")) {
          const json& c = (*e)["comm"];
          if (c.is_string() && c.get<std::string>() == "world") {
            o.comm_index = 0;
          } else if (c.is_number_integer()) {
            o.comm_index = static_cast<int>(integer(c, key + ".comm", 0, 1 << 20));
          } else {
            throw ParseError(
                key + ".comm",
                "expected \"world\" or a communicator creation index (0 = world), got " + c.dump());
          }
        }
        c_.op_faults_.push_back(o);
      }
    }
  }

  static double factor(const json& e, const std::string& key) {
    if (!e.contains("factor"))
      throw ParseError(key + ".factor", "missing (a slowdown factor >= 1)");
    return number(e["factor"], key + ".factor", 1, kMaxFactor);
  }

  Cluster& c_;
};

Result<Cluster> parse_cluster(std::string_view json_text, const std::string& source) {
  Cluster c;
  c.source_ = source;
  try {
    json root = json::parse(json_text);
    ClusterParser(c).parse(root);
  } catch (const json::parse_error& e) {
    return Status::error("cluster file " + source + ": not valid JSON: " + e.what());
  } catch (const std::exception& e) {
    return Status::error("cluster file " + source + ": " + e.what() +
                         " (the format is in docs/sim.md)");
  }
  return resolve_identity(std::move(c));
}

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The whole file, refusing what is not a plain file of sane size: /dev/zero
// or a FIFO would otherwise be read without end.
Result<std::string> read_cluster_text(const std::string& path) {
  const std::string what = "cluster file " + path + " (RINGSIM_CLUSTER): ";
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::error(what + "cannot be opened: " + std::strerror(errno));
  std::string text;
  struct stat st {};
  std::string problem;
  if (fstat(fd, &st) != 0) {
    problem = std::string("cannot be examined: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = std::string("is ") + file_kind(st.st_mode) + ", not a regular file";
  } else if (st.st_size > static_cast<off_t>(kMaxClusterFileBytes)) {
    problem = "is " + std::to_string(st.st_size) + " bytes; a cluster file is at most " +
              std::to_string(kMaxClusterFileBytes) + " bytes";
  } else {
    // Never more than one byte past the limit, even if the file grows while read.
    char buf[64 * 1024];
    text.reserve(static_cast<size_t>(st.st_size));
    while (text.size() <= kMaxClusterFileBytes) {
      const size_t room = kMaxClusterFileBytes + 1 - text.size();
      const ssize_t n = read(fd, buf, room < sizeof buf ? room : sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = std::string("cannot be read: ") + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    if (problem.empty() && text.size() > kMaxClusterFileBytes)
      problem = "grew past " + std::to_string(kMaxClusterFileBytes) + " bytes while being read";
  }
  close(fd);
  if (!problem.empty())
    return Status::error(what + problem + "; give the path of a JSON cluster file (docs/sim.md)");
  return text;
}

}  // namespace

Result<Cluster> load_cluster_file(const std::string& path) {
  auto text = read_cluster_text(path);
  if (!text.ok()) return text.status();
  return parse_cluster(text.value(), path);
}

}  // namespace ringside::sim
