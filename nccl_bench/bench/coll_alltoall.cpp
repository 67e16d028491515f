#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t elt, int nranks) {
  const size_t per_peer = aligned_share(count, elt, nranks);
  const size_t total = per_peer * static_cast<size_t>(nranks);
  return {total, total, per_peer, 0, 0};
}

ncclResult_t run(const CollArgs& a) {
  return ncclAlltoAll(a.send, a.recv, a.count, a.type, a.comm, a.stream);
}

// Block s of rank r's result is block r of rank s's input.
double output(const InputGen& gen, const Counts& c, int rank, int, size_t j) {
  const size_t source = j / c.param;
  return gen(static_cast<int>(source), static_cast<size_t>(rank) * c.param + j % c.param);
}

}  // namespace

const Collective kAllToAll = {
    "alltoall", trace::OpKind::kAllToAll, false, false, false, true, counts,
    run,        everyone_receives,        output};

}  // namespace ringside::bench
