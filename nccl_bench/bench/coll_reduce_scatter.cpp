#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t elt, int nranks) {
  const size_t base = aligned_share(count, elt, nranks);
  return {base * static_cast<size_t>(nranks), base, base, 0, base};
}

ncclResult_t run(const CollArgs& a) {
  return ncclReduceScatter(a.send, a.recv, a.count, a.type, a.op, a.comm, a.stream);
}

// Rank r gets the reduction of block r of everyone's input.
double output(const InputGen& gen, const Counts& c, int rank, int, size_t j) {
  return gen.reduced(static_cast<size_t>(rank) * c.param + j);
}

}  // namespace

const Collective kReduceScatter = {"reduce_scatter",
                                   trace::OpKind::kReduceScatter,
                                   true,
                                   true,
                                   false,
                                   true,
                                   counts,
                                   run,
                                   everyone_receives,
                                   output};

}  // namespace ringside::bench
