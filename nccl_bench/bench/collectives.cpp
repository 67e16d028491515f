#include "bench/collective.h"

namespace ringside::bench {

std::span<const Collective* const> all_collectives() {
  static const Collective* const kAll[] = {&kAllReduce, &kAllGather, &kReduceScatter,
                                           &kBroadcast, &kReduce,    &kAllToAll,
                                           &kGather,    &kScatter,   &kSendRecv};
  return kAll;
}

const Collective* find_collective(std::string_view name) {
  for (const Collective* c : all_collectives()) {
    if (name == c->name) return c;
  }
  return nullptr;
}

}  // namespace ringside::bench
