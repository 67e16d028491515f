#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t elt, int nranks) {
  const size_t base = aligned_share(count, elt, nranks);
  return {base, base * static_cast<size_t>(nranks), base, base, 0};
}

ncclResult_t run(const CollArgs& a) {
  return ncclGather(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream);
}

double output(const InputGen& gen, const Counts& c, int, int, size_t j) {
  return gen(static_cast<int>(j / c.param), j % c.param);
}

}  // namespace

const Collective kGather = {"gather", trace::OpKind::kGather, false, false, true, true, counts,
                            run,      root_receives,          output};

}  // namespace ringside::bench
