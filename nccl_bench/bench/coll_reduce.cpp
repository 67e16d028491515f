#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t, int) {
  return {count, count, count, 0, 0};
}

ncclResult_t run(const CollArgs& a) {
  return ncclReduce(a.send, a.recv, a.count, a.type, a.op, a.root, a.comm, a.stream);
}

double output(const InputGen& gen, const Counts&, int, int, size_t j) {
  return gen.reduced(j);
}

}  // namespace

const Collective kReduce = {"reduce", trace::OpKind::kReduce, true,  true, true, true, counts,
                            run,      root_receives,          output};

}  // namespace ringside::bench
