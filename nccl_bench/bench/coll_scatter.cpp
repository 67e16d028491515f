#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t elt, int nranks) {
  const size_t base = aligned_share(count, elt, nranks);
  return {base * static_cast<size_t>(nranks), base, base, 0, base};
}

ncclResult_t run(const CollArgs& a) {
  return ncclScatter(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream);
}

// Rank r gets block r of the root's input.
double output(const InputGen& gen, const Counts& c, int rank, int root, size_t j) {
  return gen(root, static_cast<size_t>(rank) * c.param + j);
}

}  // namespace

const Collective kScatter = {"scatter", trace::OpKind::kScatter, false, false, true, true, counts,
                             run,       everyone_receives,       output};

}  // namespace ringside::bench
