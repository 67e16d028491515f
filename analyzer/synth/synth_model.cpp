#include "synth/synth_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ringside/bandwidth.h"

namespace ringside::analysis::synth {
namespace {

using trace::OpKind;
using trace::OpRecord;

constexpr int kFloat32 = 7;  // ncclFloat32
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStartNs = 2'000 * kMs;            // processes start within the first 2 s
constexpr int64_t kKillAfterHangNs = 120'000 * kMs;  // a hung job is killed 2 minutes later
constexpr uint64_t kWorldSeqNever = ~0ull;
constexpr uint64_t kMainStream = 0x7f0000001000ull;
constexpr uint64_t kBucketStream = 0x7f0000002000ull;
constexpr uint64_t kCommStreamBase = 0x7f0000100000ull;  // + 0x1000 x comm index

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

OpRecord base_record(OpKind op, uint64_t comm_id, uint64_t seq, uint64_t bytes) {
  OpRecord r{};
  r.comm_id = comm_id;
  r.seq = seq;
  r.op = static_cast<uint8_t>(op);
  r.dtype = kFloat32;
  r.count = bytes / 4;
  r.bytes = bytes;
  r.stream = kMainStream;
  r.peer = -1;
  r.flags = trace::kFlagDeviceTimed;
  r.status = static_cast<uint8_t>(trace::OpStatus::kComplete);
  return r;
}

// Host side of an op: the application enqueues it a little before the device
// reaches `enqueue` and the call returns quickly (NCCL is asynchronous).  The
// device starts it at `dev_start`, later when its stream is busy.
void set_times(OpRecord& r, int64_t enqueue, int64_t dev_start, int64_t dev_end) {
  r.t_enter_ns = enqueue - 40'000;
  r.t_exit_ns = enqueue - 28'000;
  r.t_dev_start_ns = dev_start;
  r.t_dev_end_ns = dev_end;
}

}  // namespace

SynthModel::SynthModel(const SynthSpec& spec) : spec_(spec) {
  const int n = spec_.ranks;
  ranks_per_node_ = n / spec_.nodes;
  stage_size_ = n / spec_.pp;
  comms_of_.assign(static_cast<size_t>(n), {});
  tp_comm_.assign(static_cast<size_t>(n), -1);
  dp_comm_.assign(static_cast<size_t>(n), -1);
  pp_comm_.assign(static_cast<size_t>(n), -1);

  auto add_comm = [&](std::vector<int> members, uint64_t tag, int color, uint32_t ordinal) {
    SynthComm c;
    c.id = mix(spec_.seed * 1315423911ull ^ mix(tag));
    const bool split = !comms_.empty() && !spec_.unique_ids;
    c.parent = split ? comms_[0].id : 0;
    c.color = split ? color : -1;
    c.ordinal = split ? ordinal : 0;
    c.origin = split ? trace::CommOrigin::kSplit : trace::CommOrigin::kInitRank;
    for (int m : members) {
      int node = m / ranks_per_node_;
      if (std::find(c.nodes.begin(), c.nodes.end(), node) == c.nodes.end()) c.nodes.push_back(node);
    }
    c.members = std::move(members);
    int index = static_cast<int>(comms_.size());
    for (int m : c.members) comms_of_[static_cast<size_t>(m)].push_back(index);
    comms_.push_back(std::move(c));
    return index;
  };

  std::vector<int> all(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
  world_ = add_comm(all, 1, -1, 0);

  const int tp = spec_.tp, pp = spec_.pp, dp = n / (tp * pp);
  if (tp > 1) {
    for (int g = 0; g < n / tp; ++g) {
      std::vector<int> m;
      for (int i = 0; i < tp; ++i) m.push_back(g * tp + i);
      int c = add_comm(m, 100 + static_cast<uint64_t>(g), g, 0);
      for (int r : m) tp_comm_[static_cast<size_t>(r)] = c;
    }
  }
  if (dp > 1 && (tp > 1 || pp > 1)) {
    for (int s = 0; s < pp; ++s) {
      for (int t = 0; t < tp; ++t) {
        std::vector<int> m;
        for (int d = 0; d < dp; ++d) m.push_back(s * stage_size_ + d * tp + t);
        int color = s * tp + t;
        int c = add_comm(m, 1'000'000 + static_cast<uint64_t>(color), color, 1);
        for (int r : m) dp_comm_[static_cast<size_t>(r)] = c;
      }
    }
  } else if (dp > 1) {
    for (int r = 0; r < n; ++r) dp_comm_[static_cast<size_t>(r)] = world_;
  }
  if (pp > 1) {
    for (int q = 0; q < stage_size_; ++q) {
      std::vector<int> m;
      for (int s = 0; s < pp; ++s) m.push_back(s * stage_size_ + q);
      int c = add_comm(m, 2'000'000 + static_cast<uint64_t>(q), q, 2);
      for (int r : m) pp_comm_[static_cast<size_t>(r)] = c;
    }
  }
  for (int r = 0; r < n; ++r) {
    auto add_unique = [](std::vector<int>& v, int c) {
      if (c >= 0 && (v.empty() || v.back() != c) && std::find(v.begin(), v.end(), c) == v.end()) {
        v.push_back(c);
      }
    };
    add_unique(tp_list_, tp_comm_[static_cast<size_t>(r)]);
    add_unique(dp_list_, dp_comm_[static_cast<size_t>(r)]);
  }
  chunks_per_step_ = (tp > 1 ? spec_.tp_ops : 0) + (pp > 1 ? 1 : 0) +
                     (dp > 1 ? static_cast<int>(spec_.buckets.size()) : 0) + 1;
  nic_factor_.assign(static_cast<size_t>(spec_.nodes), 1.0);
  auto node_index = [&](const std::string& name) {
    for (int a = 0; a < spec_.nodes; ++a) {
      if (node_name(a) == name) return a;
    }
    return -1;
  };
  for (const Fault& x : spec_.faults) {
    const int a = node_index(x.node);
    if (a < 0) continue;
    if (x.kind == FaultKind::kSlowNic)
      nic_factor_[static_cast<size_t>(a)] = std::max(nic_factor_[static_cast<size_t>(a)], x.factor);
    const int b = x.kind == FaultKind::kSlowPair ? node_index(x.node_b) : -1;
    if (b >= 0) slow_pairs_.emplace_back(a, b, x.factor);
  }
  for (const SynthComm& c : comms_) ring_factor_.push_back(ring_factor(c));
}

double SynthModel::edge_factor(int node_a, int node_b) const {
  if (node_a == node_b) return 1;
  double f =
      std::max(nic_factor_[static_cast<size_t>(node_a)], nic_factor_[static_cast<size_t>(node_b)]);
  for (const auto& [a, b, factor] : slow_pairs_) {
    if ((a == node_a && b == node_b) || (a == node_b && b == node_a)) f = std::max(f, factor);
  }
  return f;
}

double SynthModel::ring_factor(const SynthComm& c) const {
  double f = 1;
  const size_t n = c.members.size();
  for (size_t i = 0; n > 1 && i < n; ++i)
    f = std::max(f, edge_factor(node_of(c.members[i]), node_of(c.members[(i + 1) % n])));
  return f;
}

double SynthModel::uniform(uint64_t a, uint64_t b, uint64_t c) const {
  uint64_t h = mix(mix(mix(spec_.seed ^ 0x5eedull) ^ a) ^ (b * 0x100000001b3ull) ^ (c << 17));
  return (static_cast<double>(h >> 11) + 0.5) / 9007199254740992.0;
}

double SynthModel::gauss(uint64_t a, uint64_t b, uint64_t c) const {
  double u1 = uniform(a, b, c * 2 + 0), u2 = uniform(a, b, c * 2 + 1);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

int64_t SynthModel::clock_offset_ns(int node) const {
  if (spec_.clock_offset_ms <= 0) return 0;
  double u = uniform(0xc10c, static_cast<uint64_t>(node), 0) * 2 - 1;
  return static_cast<int64_t>(u * spec_.clock_offset_ms * 1e6);
}

int64_t SynthModel::process_start_ns(int rank) const {
  return static_cast<int64_t>(uniform(0x57a7, static_cast<uint64_t>(rank), 0) * 50.0 * 1e6);
}

double SynthModel::gpu_factor(int rank) const {
  double f = 1;
  for (const Fault& x : spec_.faults) {
    if ((x.kind == FaultKind::kStraggler || x.kind == FaultKind::kThrottle) && x.rank == rank) {
      f *= x.factor;
    }
    if (x.kind == FaultKind::kSlowNode && node_name(node_of(rank)) == x.node) f *= x.factor;
  }
  return f;
}

int64_t SynthModel::chunk_ns(int rank, int step, int slot) const {
  double f = gpu_factor(rank);
  for (const Fault& x : spec_.faults) {
    if (x.kind == FaultKind::kHeavyStage && stage_of(rank) == x.stage) f *= x.factor;
    if (x.kind == FaultKind::kHeavyReplica && replica_of(rank) == x.replica) f *= x.factor;
    if (x.kind == FaultKind::kImbalanceData) {
      // The batch's size varies per step and replica (the ranks of one replica, its
      // tensor-parallel shards and pipeline stages, share its batch): an exponential
      // tail, so a different replica is the slowest in each step.
      double u =
          uniform(0xda7a, static_cast<uint64_t>(replica_of(rank)), static_cast<uint64_t>(step));
      f *= 1 + x.amount * std::min(-std::log(u), 4.0) / 2;
    }
    // A long sample: in every K-th step one rank, drawn anew (or the given one), gets F
    // times the work; its tensor-parallel peers wait for it, and through them everyone.
    if (x.kind == FaultKind::kHeavySample && step % x.every == 0) {
      const int heavy =
          x.rank >= 0
              ? x.rank
              : static_cast<int>(uniform(0x5a3b, static_cast<uint64_t>(step), 0) * spec_.ranks);
      if (heavy == rank) f *= x.factor;
    }
  }
  if (spec_.hiccups > 0) {
    const auto r = static_cast<uint64_t>(rank), s = static_cast<uint64_t>(step);
    const auto k = static_cast<uint64_t>(slot);
    if (uniform(0x41cc, r, s * 4096 + k) < spec_.hiccups)
      f *= 1.3 + 0.7 * uniform(0x41cd, r, s * 4096 + k);
  }
  double base = spec_.compute_ms * 1e6 / chunks_per_step_;
  double j = 1 + spec_.jitter * gauss(static_cast<uint64_t>(rank), static_cast<uint64_t>(step),
                                      static_cast<uint64_t>(slot));
  return static_cast<int64_t>(base * f * std::max(j, 0.2));
}

int64_t SynthModel::transfer_ns(int ci, OpKind op, uint64_t bytes, int step, uint64_t seq,
                                RingTransfer* ring) const {
  const SynthComm& c = comms_[static_cast<size_t>(ci)];
  const bool intra = c.nodes.size() < 2;
  const double bw = intra ? spec_.intra_gbps : spec_.inter_gbps;
  const double lat = (intra ? spec_.intra_latency_us : spec_.inter_latency_us) * 1e3;
  const int n = static_cast<int>(c.members.size());
  const double j = std::max(1 + 0.01 * gauss(c.id, static_cast<uint64_t>(step), seq), 0.5);
  const double base = lat * std::log2(std::max(n, 2)) * j;
  const double bus_bytes = static_cast<double>(bytes) * bus_bw_factor(op, n);
  const double per_factor = bus_bytes / (bw * 1e9) * 1e9 * j;
  if (ring != nullptr) {
    ring->comm = ci;
    ring->bus_bytes = static_cast<uint64_t>(bus_bytes);
    ring->base_ns = base;
    ring->per_factor_ns = per_factor;
  }
  return static_cast<int64_t>(base +
                              per_factor * (intra ? 1.0 : ring_factor_[static_cast<size_t>(ci)]));
}

int64_t SynthModel::p2p_ns(int a, int b, uint64_t bytes, int step) const {
  const bool intra = node_of(a) == node_of(b);
  double bw = (intra ? spec_.intra_gbps : spec_.inter_gbps) / edge_factor(node_of(a), node_of(b));
  for (const Fault& x : spec_.faults) {
    if (x.kind == FaultKind::kSlowP2p &&
        ((x.rank == a && x.peer == b) || (x.rank == b && x.peer == a))) {
      bw /= x.factor;
    }
  }
  double lat = (intra ? spec_.intra_latency_us : spec_.inter_latency_us) * 1e3;
  double t = lat + static_cast<double>(bytes) / (bw * 1e9) * 1e9;
  double j = 1 + 0.01 * gauss(static_cast<uint64_t>(a) * 65536 + static_cast<uint64_t>(b),
                              static_cast<uint64_t>(step), 7);
  return static_cast<int64_t>(t * std::max(j, 0.5));
}

const Fault* SynthModel::hang_fault() const {
  for (const Fault& x : spec_.faults) {
    switch (x.kind) {
      case FaultKind::kStop:
      case FaultKind::kAllStuck:
      case FaultKind::kStall:
      case FaultKind::kDesync:
      case FaultKind::kCrash:
        return &x;
      default:
        break;
    }
  }
  return nullptr;
}

uint64_t SynthModel::stream_of(int comm, bool bucket) const {
  if (spec_.comm_streams) return kCommStreamBase + 0x1000ull * static_cast<uint64_t>(comm);
  return bucket ? kBucketStream : kMainStream;
}

bool SynthModel::collective(OpSink& sink, int ci, OpKind op, uint64_t bytes, int step, int slot,
                            bool bucket) {
  SynthComm& c = comms_[static_cast<size_t>(ci)];
  const uint64_t seq = c.seq++;
  const uint64_t stream = stream_of(ci, bucket);
  int64_t last = 0;
  std::vector<int64_t> arrival(c.members.size()), enqueue(c.members.size());
  for (size_t i = 0; i < c.members.size(); ++i) {
    const size_t r = static_cast<size_t>(c.members[i]);
    if (bucket) {
      enqueue[i] = t_[r];
      arrival[i] = std::max(t_[r], bucket_t_[r]);
    } else {
      arrival[i] = t_[r] + chunk_ns(c.members[i], step, static_cast<uint64_t>(slot));
      enqueue[i] = arrival[i];
    }
    last = std::max(last, arrival[i]);
  }
  const Fault* hf = hang_fault();
  const bool hang_here = hf != nullptr && ci == world_ && static_cast<int64_t>(seq) == hf->op;
  if (hang_here) {
    hung_ = true;
    int64_t latest = 0;
    for (size_t i = 0; i < c.members.size(); ++i) {
      int r = c.members[i];
      RankEnd& e = ends_[static_cast<size_t>(r)];
      OpRecord rec = base_record(op, c.id, seq, bytes);
      rec.stream = stream;
      rec.status = static_cast<uint8_t>(trace::OpStatus::kDevicePending);
      set_times(rec, enqueue[i], arrival[i], trace::kUnknownTime);
      bool culprit = hf->rank == r;
      if (culprit && (hf->kind == FaultKind::kStop || hf->kind == FaultKind::kCrash)) {
        e.crashed = hf->kind == FaultKind::kCrash;
        e.last_flush_ns = arrival[i];  // a crash ends its flushes; a stop keeps flushing
        continue;
      }
      if (culprit && hf->kind == FaultKind::kStall) rec.t_dev_start_ns = trace::kUnknownTime;
      if (culprit && hf->kind == FaultKind::kDesync) {
        rec.count *= 2;
        rec.bytes *= 2;
      }
      e.pending.push_back(rec);
      latest = std::max(latest, arrival[i]);
    }
    job_end_ns_ = std::max(latest, last) + kKillAfterHangNs;
    for (size_t r = 0; r < ends_.size(); ++r) {
      if (!ends_[r].crashed) {
        ends_[r].last_flush_ns = job_end_ns_;
        ends_[r].killed = true;
      }
    }
    return false;
  }
  RingTransfer ring;
  int64_t transfer = transfer_ns(ci, op, bytes, step, seq, &ring);
  if (!bucket) {
    // A bucket still in flight on a member shares its links and SMs with this op.
    bool contended = false;
    for (int r : c.members) contended = contended || bucket_t_[static_cast<size_t>(r)] > last;
    if (contended) {
      const double f = 1.3 + 0.4 * uniform(0xc0de, c.id, seq);
      transfer = static_cast<int64_t>(static_cast<double>(transfer) * f);
      ring.base_ns *= f;
      ring.per_factor_ns *= f;
    }
  }
  const int64_t end = last + transfer;
  for (size_t i = 0; i < c.members.size(); ++i) {
    const size_t r = static_cast<size_t>(c.members[i]);
    OpRecord rec = base_record(op, c.id, seq, bytes);
    rec.stream = stream;
    set_times(rec, enqueue[i], arrival[i], end);
    sink.op(c.members[i], rec);
    (bucket ? bucket_t_ : t_)[r] = end;
  }
  if (spec_.links && c.nodes.size() > 1) {
    ring.start_ns = last;
    ring.window_ns = transfer;
    sink.ring(ring);
  }
  return true;
}

void SynthModel::run(OpSink& sink) {
  const int n = spec_.ranks;
  for (auto& c : comms_) c.seq = 0;
  ends_.assign(static_cast<size_t>(n), {});
  step_starts_.clear();
  hung_ = false;
  t_.assign(static_cast<size_t>(n), 0);
  bucket_t_.assign(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) t_[static_cast<size_t>(r)] = kStartNs + process_start_ns(r);
  send_seq_.assign(static_cast<size_t>(n), 0);
  recv_seq_.assign(static_cast<size_t>(n), 0);
  const int pp = spec_.pp;
  std::vector<int64_t> send_arrival(static_cast<size_t>(n), 0);

  for (int step = 0; step < spec_.steps; ++step) {
    step_starts_.push_back(*std::min_element(t_.begin(), t_.end()));
    int slot = 0;
    // Tensor-parallel all-reduces inside the layers: all in the forward pass, or with
    // overlap half of them in the backward pass, between the gradient buckets.
    const int tp_ops = spec_.tp > 1 ? spec_.tp_ops : 0;
    const int tp_forward = spec_.overlap ? (tp_ops + 1) / 2 : tp_ops;
    auto tp_round = [&]() {
      for (int c : tp_list_) {
        if (!collective(sink, c, OpKind::kAllReduce, spec_.tp_bytes, step, slot)) return false;
      }
      ++slot;
      return true;
    };
    for (int k = 0; k < tp_forward; ++k) {
      if (!tp_round()) return;
    }
    // Pipeline: stage s receives from s-1, computes its part, sends to s+1.
    if (pp > 1) {
      for (int s = 0; s < pp; ++s) {
        for (int q = 0; q < stage_size_; ++q) {
          int r = s * stage_size_ + q;
          int64_t& t = t_[static_cast<size_t>(r)];
          const SynthComm& pc = comms_[static_cast<size_t>(pp_comm_[static_cast<size_t>(r)])];
          if (s > 0) {
            int src = r - stage_size_;
            int64_t sa = send_arrival[static_cast<size_t>(src)];
            int64_t end = std::max(sa, t) + p2p_ns(src, r, spec_.pp_bytes, step);
            OpRecord send = base_record(OpKind::kSend, pc.id, pc.seq, spec_.pp_bytes);
            send.peer = s;
            send.peer_seq = send_seq_[static_cast<size_t>(src)]++;
            send.stream = stream_of(pp_comm_[static_cast<size_t>(r)], false);
            set_times(send, sa, sa, end);
            OpRecord recv = base_record(OpKind::kRecv, pc.id, pc.seq, spec_.pp_bytes);
            recv.peer = s - 1;
            recv.peer_seq = recv_seq_[static_cast<size_t>(r)]++;
            recv.stream = send.stream;
            set_times(recv, t, t, end);
            sink.op(r, recv);
            sink.op(src, send);
            if (spec_.links && node_of(src) != node_of(r)) {
              sink.peer({pp_comm_[static_cast<size_t>(r)], src, r, spec_.pp_bytes, std::max(sa, t),
                         end - std::max(sa, t)});
            }
            t_[static_cast<size_t>(src)] = end;
            t = end;
          }
          t += chunk_ns(r, step, static_cast<uint64_t>(slot));
          send_arrival[static_cast<size_t>(r)] = t;
        }
      }
      ++slot;
    }
    // Gradient buckets on the data-parallel communicator.
    if (!spec_.overlap || dp_list_.empty()) {
      for (size_t b = 0; b < spec_.buckets.size(); ++b, ++slot) {
        for (int c : dp_list_) {
          if (!collective(sink, c, OpKind::kAllReduce, spec_.buckets[b], step, slot)) return;
        }
      }
    } else {
      // Backward: each bucket's gradients are ready after its share of the backward
      // compute (and tensor-parallel all-reduces); its all-reduce runs on the bucket
      // stream while the backward pass goes on.
      const int nb = static_cast<int>(spec_.buckets.size());
      int tp_done = 0;
      for (int b = 0; b < nb; ++b) {
        for (; tp_done < (tp_ops - tp_forward) * (b + 1) / nb; ++tp_done) {
          if (!tp_round()) return;
        }
        for (int r = 0; r < n; ++r) {
          t_[static_cast<size_t>(r)] += chunk_ns(r, step, static_cast<uint64_t>(slot));
        }
        for (int c : dp_list_) {
          if (!collective(sink, c, OpKind::kAllReduce, spec_.buckets[static_cast<size_t>(b)], step,
                          slot, true)) {
            return;
          }
        }
        ++slot;
      }
      // The optimizer waits for the last bucket.
      for (int r = 0; r < n; ++r) {
        int64_t& t = t_[static_cast<size_t>(r)];
        t = std::max(t, bucket_t_[static_cast<size_t>(r)]);
      }
    }
    if (tp_ops - tp_forward > 0 && (!spec_.overlap || dp_list_.empty())) {
      for (int k = tp_forward; k < tp_ops; ++k) {
        if (!tp_round()) return;
      }
    }
    // The loss/metrics all-reduce on the world communicator.
    if (spec_.tp > 1 || pp > 1 || dp_comm_[0] < 0) {
      if (!collective(sink, world_, OpKind::kAllReduce, 8, step, slot)) return;
    }
  }
  job_end_ns_ = *std::max_element(t_.begin(), t_.end()) + 5 * kMs;
  for (auto& e : ends_) e.last_flush_ns = job_end_ns_;
}

}  // namespace ringside::analysis::synth
