#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t, int) {
  return {count, count, count, 0, 0};
}

ncclResult_t run(const CollArgs& a) {
  return ncclAllReduce(a.send, a.recv, a.count, a.type, a.op, a.comm, a.stream);
}

double output(const InputGen& gen, const Counts&, int, int, size_t j) {
  return gen.reduced(j);
}

}  // namespace

const Collective kAllReduce = {
    "all_reduce", trace::OpKind::kAllReduce, true,  true, false, true, counts,
    run,          everyone_receives,         output};

}  // namespace ringside::bench
