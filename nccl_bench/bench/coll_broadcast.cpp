#include "bench/collective.h"

namespace ringside::bench {
namespace {

Counts counts(size_t count, size_t, int) {
  return {count, count, count, 0, 0};
}

ncclResult_t run(const CollArgs& a) {
  return ncclBroadcast(a.send, a.recv, a.count, a.type, a.root, a.comm, a.stream);
}

double output(const InputGen& gen, const Counts&, int, int root, size_t j) {
  return gen(root, j);
}

}  // namespace

const Collective kBroadcast = {
    "broadcast", trace::OpKind::kBroadcast, false, false, true, true, counts,
    run,         everyone_receives,         output};

}  // namespace ringside::bench
