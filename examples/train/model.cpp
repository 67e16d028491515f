#include "model.h"

#include "checks.h"

namespace ringside::examples {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// splitmix64: a portable, seedable hash so every rank derives the same
// pseudo-random workload without talking to the others.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit_random(uint64_t seed, uint64_t a, uint64_t b) {
  const uint64_t h = mix(mix(mix(seed) ^ a) ^ (b * 0x632be59bd9b4e019ULL));
  return static_cast<double>(h >> 11) / static_cast<double>(1ULL << 53);
}

ncclComm_t make_group(ncclComm_t world, const GroupMembership& group, CommInit init,
                      const Identity& id) {
  if (init == CommInit::kUniqueId) return init_group_comm(id, world, group);
  ncclComm_t comm = nullptr;
  RINGSIDE_NCCL_CHECK_COMM(ncclCommSplit(world, group.color, group.index, &comm, nullptr), world);
  return comm;
}

}  // namespace

Layout Layout::make(int rank, int world, int tp, int pp) {
  Layout l;
  l.world = world;
  l.tp = tp;
  l.pp = pp;
  l.dp = world / (tp * pp);
  l.tp_index = rank % tp;
  l.dp_index = (rank / tp) % l.dp;
  l.stage = rank / (tp * l.dp);
  return l;
}

GroupMembership Layout::tp_group() const {
  const int first = stage * dp * tp + dp_index * tp;
  return {stage * dp + dp_index, tp_index, tp, first};
}

GroupMembership Layout::dp_group() const {
  const int first = stage * dp * tp + tp_index;
  return {stage * tp + tp_index, dp_index, dp, first};
}

GroupMembership Layout::pp_group() const {
  const int first = dp_index * tp + tp_index;
  return {dp_index * tp + tp_index, stage, pp, first};
}

Comms Comms::make(ncclComm_t world, const Layout& l, CommInit init, const Identity& id) {
  Comms c;
  c.world = world;
  // Every rank makes the same sequence of calls, as NCCL requires.
  if (l.tp > 1) c.tp = make_group(world, l.tp_group(), init, id);
  if (l.dp == l.world) {
    c.dp = world;
  } else if (l.dp > 1) {
    c.dp = make_group(world, l.dp_group(), init, id);
  }
  if (l.pp > 1) c.pp = make_group(world, l.pp_group(), init, id);
  return c;
}

void Comms::destroy() {
  for (ncclComm_t* comm : {&tp, &dp, &pp}) {
    if (*comm != nullptr && *comm != world) {
      RINGSIDE_NCCL_CHECK_COMM(ncclCommFinalize(*comm), *comm);
      RINGSIDE_NCCL_CHECK(ncclCommDestroy(*comm));
    }
    *comm = nullptr;
  }
  if (world != nullptr) {
    RINGSIDE_NCCL_CHECK_COMM(ncclCommFinalize(world), world);
    RINGSIDE_NCCL_CHECK(ncclCommDestroy(world));
    world = nullptr;
  }
}

void Comms::abort() {
  for (ncclComm_t* comm : {&tp, &dp, &pp}) {
    if (*comm != nullptr && *comm != world) ncclCommAbort(*comm);  // best effort while failing
    *comm = nullptr;
  }
  if (world != nullptr) ncclCommAbort(world);
  world = nullptr;
}

Sizes Sizes::make(const TrainConfig& config, const Layout& layout) {
  Sizes s;
  const auto dp = static_cast<size_t>(layout.dp);
  size_t elements = static_cast<size_t>(config.bucket_mb * kMiB / sizeof(float));
  elements = (elements + dp - 1) / dp * dp;  // reduce-scatter needs equal shards
  s.bucket = std::max(elements, dp);
  s.shard = s.bucket / dp;
  s.activation =
      std::max<size_t>(1, static_cast<size_t>(config.activation_mb * kMiB / sizeof(float)));
  return s;
}

int data_heavy_rank(uint64_t seed, int step, int world) {
  return static_cast<int>(mix(mix(seed) ^ static_cast<uint64_t>(step)) %
                          static_cast<uint64_t>(world));
}

double step_compute_ms(const TrainConfig& config, const Layout& layout, int rank, int step) {
  double factor = 1.0;
  switch (config.imbalance) {
    case Imbalance::kNone:
      break;
    case Imbalance::kData:
      if (data_heavy_rank(config.seed, step, layout.world) == rank) factor = config.heavy_factor;
      break;
    case Imbalance::kPipeline:
      if (layout.stage == config.heavy_stage) factor = config.heavy_factor;
      break;
  }
  if (config.jitter > 0) {
    const double u =
        unit_random(config.seed, static_cast<uint64_t>(step), static_cast<uint64_t>(rank) + 1);
    factor *= 1.0 + config.jitter * (2.0 * u - 1.0);
  }
  return config.compute_ms * factor;
}

}  // namespace ringside::examples
